"""`turnwatch serve` in a subprocess, as a user runs it, watched from outside.

`Launched` starts it on free ports, optionally under a resource limit set in the child before
exec; its stderr is collected by a thread (a full pipe would block its logging). Two ways to
configure it:

- `Serve`, by environment variables on top of `BASE_ENV`, for the reliability tests. Sessions are
  counted where they leave the pipeline: an exporter plug-in (`log_score`) appends one line per
  score record to a file, so counts survive the process that produced them.
- `ServeProcess`, by a YAML config and a data directory of its own, for the hostile-input tests
  and `benchmarks/faults.py`. Peak memory is read from /proc: `reset_peak` clears the high-water
  mark (Linux >= 4.0), so `peak_growth_mib` is what happened since. `HealthWatch` polls `/healthz`
  while a fault runs.
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
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import httpx
import yaml
from prometheus_client.parser import text_string_to_metric_families

from tests.otlp_requests import metric_value
from tests.waiting import eventually
from turnwatch.bus.records import INCIDENTS, SCORES, SESSIONS, ExporterRecord, Output
from turnwatch.scores import ScoreRecord

ROOT = Path(__file__).resolve().parent.parent
SCORE_LOG = "TURNWATCH_TEST_SCORE_LOG"
CONSUMED = (SESSIONS, SCORES, INCIDENTS)
BASE_ENV = {
    "TURNWATCH_BUS__EMBEDDED__SPOOL": "true",
    "TURNWATCH_BUS__SHUTDOWN_TIMEOUT_SECONDS": "1",
    "TURNWATCH_BUS__EXPORTER_HANDLER": "tests.serve_process:log_score",
    "TURNWATCH_SESSIONS__IDLE_TIMEOUT_SECONDS": "0.5",
    "TURNWATCH_SESSIONS__SWEEP_INTERVAL_SECONDS": "0.1",
    "TURNWATCH_SCORERS__CONTRACTS_DIR": str(ROOT / "deploy" / "contracts"),
}


async def log_score(topic: str, record: ExporterRecord) -> list[Output]:
    """Exporter plug-in: one line per score record, appended (O_APPEND: whole lines only)."""
    if isinstance(record, ScoreRecord):
        line = json.dumps({"session_id": record.session_id, "revision": record.revision})
        descriptor = os.open(os.environ[SCORE_LOG], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(descriptor, f"{line}\n".encode())
        finally:
            os.close(descriptor)
    return []


def scored(log: Path) -> Counter[tuple[str, int]]:
    if not log.exists():
        return Counter()
    lines = [json.loads(line) for line in log.read_text().splitlines() if line]
    return Counter((item["session_id"], item["revision"]) for item in lines)


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


def _limit(kind: int, limit: int) -> None:
    # Runs in the child before exec: soft and hard, so turnwatch cannot raise it. Past a file
    # size limit every regular-file write fails with EFBIG instead of the process being killed.
    if kind == resource.RLIMIT_FSIZE:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(kind, (limit, limit))


class Launched:
    """`turnwatch serve` with `arguments`, on free ports; `limit` is (resource, value)."""

    def __init__(
        self,
        arguments: list[str],
        env: dict[str, str] | None = None,
        limit: tuple[int, int] | None = None,
    ) -> None:
        self.process = subprocess.Popen(
            [
                *(sys.executable, "-m", "turnwatch", "serve", *arguments),
                *("--otlp-port", "0", "--grpc-port", "0", "--ops-port", "0"),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            env=env,
            preexec_fn=(lambda: _limit(*limit)) if limit is not None else None,
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

    def _read_stderr(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.stderr.append(line)

    def logs(self) -> str:
        self._reader.join(1)
        return "".join(self.stderr)

    def metric(self, name: str, **labels: str) -> float:
        return metric_value(self.ops_url, name, **labels)


class Serve(Launched):
    """Configured by environment variables; the score log sits next to `data_dir`."""

    def __init__(self, data_dir: Path, file_size_limit: int | None = None, **env: str) -> None:
        limit = (resource.RLIMIT_FSIZE, file_size_limit) if file_size_limit is not None else None
        score_log = str(data_dir.parent / "scored.log")
        super().__init__(
            ["--data-dir", str(data_dir)],
            {**os.environ, **BASE_ENV, SCORE_LOG: score_log, **env},
            limit,
        )

    def kill(self) -> int:
        """SIGKILL: no drain, no flush, no handler runs."""
        self.process.kill()
        code = self.process.wait(10)
        self._reader.join(5)
        return code

    def terminate(self, timeout: float = 30) -> int:
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout)
        finally:
            if self.process.poll() is None:
                self.process.kill()
            self._reader.join(5)


def scored_at_least(log: Path, count: int, timeout: float) -> None:
    eventually(
        lambda: sum(scored(log).values()),
        lambda total: total >= count,
        timeout=timeout,
        interval=0.1,
        what=f"{count} sessions scored",
    )


def bus_idle(serve: Serve) -> None:
    """Wait until every topic of the embedded bus is empty. A record leaves its queue only after
    its handler ran, so from then on the score log is final and can be counted exactly."""
    eventually(
        lambda: [serve.metric("turnwatch_bus_queue_depth", topic=topic) for topic in CONSUMED],
        lambda depths: not any(depths),
        what="the embedded bus to be idle",
    )


class ServeProcess(Launched):
    """Configured by a YAML file of `settings` (dotted keys) in `workdir`, data under it."""

    def __init__(
        self, workdir: Path, settings: dict[str, Any], descriptor_limit: int | None = None
    ) -> None:
        workdir.mkdir(parents=True, exist_ok=True)
        config = workdir / "turnwatch.yaml"
        config.write_text(yaml.safe_dump(nested(settings)), encoding="utf-8")
        limit = (resource.RLIMIT_NOFILE, descriptor_limit) if descriptor_limit is not None else None
        super().__init__(
            ["--config", str(config), "--data-dir", str(workdir / "data")], limit=limit
        )
        self.client = httpx.Client(timeout=60)

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
