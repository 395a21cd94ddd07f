"""`turnwatch serve` in a subprocess, as a user runs it, and how tests count what it scored.

Sessions are counted where they leave the pipeline: an exporter plug-in (`log_score`) appends
one line per score record to a file, so counts survive the process that produced them.
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
from collections import Counter
from pathlib import Path

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


def _limit_file_size(limit: int) -> None:
    # Runs in the child before exec: every regular-file write past `limit` bytes fails with EFBIG.
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))


class Serve:
    """`turnwatch serve` in a subprocess on free ports; stderr collected by a thread (a full
    pipe would block the process's logging)."""

    def __init__(self, data_dir: Path, file_size_limit: int | None = None, **env: str) -> None:
        limit = file_size_limit
        self.process = subprocess.Popen(
            [
                *(sys.executable, "-m", "turnwatch", "serve", "--data-dir", str(data_dir)),
                *("--otlp-port", "0", "--grpc-port", "0", "--ops-port", "0"),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            env={**os.environ, **BASE_ENV, SCORE_LOG: str(data_dir.parent / "scored.log"), **env},
            preexec_fn=(lambda: _limit_file_size(limit)) if limit is not None else None,
        )
        self.stderr: list[str] = []
        self._reader = threading.Thread(target=self._read_stderr, daemon=True)
        self._reader.start()
        banner = self.process.stdout.readline()
        assert banner, self.logs()
        http, _grpc, ops = (int(port) for port in re.findall(r":(\d+)", banner)[:3])
        self.otlp = f"http://127.0.0.1:{http}"
        self.ops = f"http://127.0.0.1:{ops}"

    def _read_stderr(self) -> None:
        for line in self.process.stderr:
            self.stderr.append(line)

    def logs(self) -> str:
        self._reader.join(1)
        return "".join(self.stderr)

    def metric(self, name: str, **labels: str) -> float:
        return metric_value(self.ops, name, **labels)

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
