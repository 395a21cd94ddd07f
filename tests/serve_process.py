"""`turnwatch serve` as a subprocess, watched from outside: for the hostile-input tests and
`benchmarks/faults.py`. The server gets its own YAML config and data directory, optionally a
file-descriptor limit; its stderr is collected by a thread (a full pipe would block its logging).
Peak memory is read from /proc: `reset_peak` clears the high-water mark (Linux >= 4.0), so
`peak_growth_mib` is what happened since. `HealthWatch` polls `/healthz` while a fault runs.
"""

from __future__ import annotations

import json
import os
import re
import resource
import signal
import subprocess
import sys
import threading
from collections import defaultdict
from pathlib import Path
from typing import Any

import httpx
import yaml
from prometheus_client.parser import text_string_to_metric_families

ROOT = Path(__file__).resolve().parent.parent


def nested(dotted: dict[str, Any]) -> dict[str, Any]:
    """{"otlp.max_connections": 4} as the YAML file has it: {"otlp": {"max_connections": 4}}."""
    tree: dict[str, Any] = {}
    for key, value in dotted.items():
        *sections, name = key.split(".")
        node = tree
        for section in sections:
            node = node.setdefault(section, {})
        node[name] = value
    return tree


class ServeProcess:
    def __init__(
        self, workdir: Path, settings: dict[str, Any], descriptor_limit: int | None = None
    ) -> None:
        workdir.mkdir(parents=True, exist_ok=True)
        config = workdir / "turnwatch.yaml"
        config.write_text(yaml.safe_dump(nested(settings)), encoding="utf-8")
        limit = descriptor_limit
        self.process = subprocess.Popen(
            [
                *(sys.executable, "-m", "turnwatch", "serve", "--config", str(config)),
                *("--otlp-port", "0", "--grpc-port", "0", "--ops-port", "0"),
                *("--data-dir", str(workdir / "data")),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            preexec_fn=(lambda: _limit_descriptors(limit)) if limit is not None else None,
        )
        self.stderr: list[str] = []
        self._reader = threading.Thread(target=self._read_stderr, daemon=True)
        self._reader.start()
        banner = self.process.stdout.readline() if self.process.stdout else ""
        if not banner:
            raise RuntimeError(f"turnwatch serve did not start: {self.logs()[-3000:]}")
        http, grpc_port, ops = (int(port) for port in re.findall(r":(\d+)", banner)[:3])
        self.http_port, self.grpc_port, self.ops_port = http, grpc_port, ops
        self.otlp_url = f"http://127.0.0.1:{http}"
        self.grpc_endpoint = f"127.0.0.1:{grpc_port}"
        self.ops_url = f"http://127.0.0.1:{ops}"
        self.client = httpx.Client(timeout=60)

    def _read_stderr(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.stderr.append(line)

    def logs(self) -> str:
        self._reader.join(0.5)
        return "".join(self.stderr)

    def counters(self) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
        """Every sample on /metrics, by name and labels."""
        text = self.client.get(f"{self.ops_url}/metrics").text
        samples: dict[tuple[str, frozenset[tuple[str, str]]], float] = defaultdict(float)
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                samples[(sample.name, frozenset(sample.labels.items()))] += sample.value
        return samples

    def _status(self, field: str) -> float:
        with open(f"/proc/{self.process.pid}/status") as status:
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024
        raise RuntimeError(f"{field} not in /proc/{self.process.pid}/status")

    def rss_mib(self) -> float:
        return self._status("VmRSS")

    def reset_peak(self) -> float:
        """Clear the peak-RSS mark; returns the RSS it starts from."""
        with open(f"/proc/{self.process.pid}/clear_refs", "w") as clear:
            clear.write("5")
        return self.rss_mib()

    def peak_growth_mib(self, since: float) -> float:
        return self._status("VmHWM") - since

    def stop(self, timeout: float = 60) -> int:
        self.client.close()
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._reader.join(5)
        return self.process.returncode


def _limit_descriptors(limit: int) -> None:
    # Runs in the child before exec: soft and hard, so turnwatch cannot raise it.
    resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))


HEALTH_POLLER = """
import json, sys, threading, time
import httpx

url, stop = sys.argv[1], threading.Event()
threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
worst, failures, polls = 0.0, 0, 0
with httpx.Client(timeout=10) as client:
    while True:
        last = stop.is_set()  # one more poll once told to stop: it ends after the fault did
        started = time.perf_counter()
        try:
            ok = client.get(url).status_code == 200
        except httpx.HTTPError:
            ok = False
        worst = max(worst, time.perf_counter() - started)
        polls, failures = polls + 1, failures + (not ok)
        if last:
            break
        time.sleep(0.02)
print(json.dumps({"worst": worst, "failures": failures, "polls": polls}), flush=True)
"""


class HealthWatch:
    """Polls /healthz every 20 ms while a fault runs, from a process of its own (a fault that
    builds a large body in this process holds its GIL, which would show as server latency):
    the worst latency, and how many polls got no 200 within 10 s."""

    def __init__(self, ops_url: str) -> None:
        self.url = f"{ops_url}/healthz"
        self.worst = 0.0
        self.failures = 0
        self.polls = 0
        self._process: subprocess.Popen[str] | None = None

    def __enter__(self) -> HealthWatch:
        self._process = subprocess.Popen(
            [sys.executable, "-c", HEALTH_POLLER, self.url],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._process is not None
        output, _ = self._process.communicate(timeout=30)  # closing stdin stops the poller
        report = json.loads(output)
        self.worst, self.failures, self.polls = report["worst"], report["failures"], report["polls"]


def descriptors_open(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))
