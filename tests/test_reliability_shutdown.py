"""`turnwatch serve` (all roles, embedded bus) as a user runs it, under process-level faults.

- SIGTERM while a client is sending: the process drains, flushes and exits 0; with the embedded
  spool on, what was not scored yet stays on disk and a restart scores it, each session once.
- The disk is full under the spool (RLIMIT_FSIZE in the child, SIGXFSZ ignored, so writes fail
  with EFBIG as on a full disk): a clear error in the log, backpressure (OTLP 503) instead of a
  crash or a silent stall, SIGTERM still exits 0, and a restart with room scores what was taken.

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
import time
from collections import Counter
from pathlib import Path

import httpx
import pytest

from tests.otlp_requests import LOOPBACK, metric_value
from tests.test_bus_embedded import post_session
from tests.waiting import eventually
from turnwatch.bus.records import INCIDENTS, SCORES, SESSIONS, ExporterRecord, Output
from turnwatch.scores import ScoreRecord

pytestmark = pytest.mark.slow  # `turnwatch serve` subprocesses, filled to a full disk

ROOT = Path(__file__).resolve().parent.parent
SCORE_LOG = "TURNWATCH_TEST_SCORE_LOG"
CONSUMED = (SESSIONS, SCORES, INCIDENTS)
BASE_ENV = {
    "TURNWATCH_BUS__EMBEDDED__SPOOL": "true",
    "TURNWATCH_BUS__SHUTDOWN_TIMEOUT_SECONDS": "1",
    "TURNWATCH_BUS__EXPORTER_HANDLER": "tests.test_reliability_shutdown:log_score",
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

    def terminate(self, timeout: float = 30) -> int:
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout)
        finally:
            if self.process.poll() is None:
                self.process.kill()
            self._reader.join(5)


class Sender:
    """A client posting one whole session per request until told to stop or refused."""

    def __init__(self, base: str, prefix: str, pause: float = 0.0) -> None:
        self.base, self.prefix, self.pause = base, prefix, pause
        self.acknowledged = 0
        self.unanswered = 0  # sent, but no answer: the server may or may not have it
        self.refused: list[int] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        number = 0
        while not self.stop.is_set():
            try:
                response = post_session(self.base, f"{self.prefix}-{number}")
            except httpx.ConnectError:
                return  # the listener is closed: nothing was sent
            except httpx.HTTPError:
                self.unanswered += 1
                return
            number += 1
            if response.status_code == 200:
                self.acknowledged += 1
            else:
                self.refused.append(response.status_code)
            time.sleep(self.pause)

    def wait_for(self, count: int, timeout: float) -> None:
        eventually(
            lambda: self.acknowledged,
            lambda acknowledged: acknowledged >= count,
            timeout=timeout,
            interval=0.02,
            what=f"{count} sessions acknowledged",
        )


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


def test_sigterm_during_traffic_exits_0_and_a_restart_scores_the_rest_once(tmp_path):
    data_dir, log = tmp_path / "data", tmp_path / "scored.log"
    # A slow scorer, so a backlog sits in the spool when SIGTERM comes.
    slow = {
        "TURNWATCH_BUS__SCORER_PROCESSOR": "tests.kafka_broker:score_echo",
        "TURNWATCH_TEST_SCORER_DELAY": "0.1",
    }
    first = Serve(data_dir, **slow)
    sender = Sender(first.otlp, "sigterm")
    sender.thread.start()
    try:
        sender.wait_for(40, timeout=60)
    finally:
        code = first.terminate()  # the sender is still sending
        sender.stop.set()
        sender.thread.join(10)
    logs = first.logs()
    assert code == 0, logs[-3000:]
    assert "turnwatch stopped" in logs
    assert "bus not drained at shutdown" in logs  # the backlog stayed on disk ...
    taken = sender.acknowledged
    before = scored(log)
    assert 0 < sum(before.values()) < taken

    second = Serve(data_dir, TURNWATCH_BUS__SCORER_PROCESSOR="tests.kafka_broker:score_echo")
    try:
        # ... and the restart takes it from there (a request cut by SIGTERM may count too).
        limit = taken + sender.unanswered
        scored_at_least(log, taken, timeout=60)
        bus_idle(second)
    finally:
        assert second.terminate() == 0
    after = scored(log)
    assert max(after.values()) == 1, "a session was scored twice"
    assert taken <= sum(after.values()) <= limit


def test_a_full_disk_under_the_spool_is_backpressure_with_a_clear_error_not_a_crash(tmp_path):
    data_dir, log = tmp_path / "data", tmp_path / "scored.log"
    small = {
        # Room for a few dozen records per segment file; the segments never roll over first.
        "TURNWATCH_BUS__EMBEDDED__QUEUE_SIZE": "20",
        "TURNWATCH_HANDOFF__QUEUE_SIZE": "4",
        "TURNWATCH_HANDOFF__HIGH_WATERMARK": "0.5",
    }
    full = Serve(data_dir, file_size_limit=96 * 1024, **small)
    sender = Sender(full.otlp, "disk-full", pause=0.01)
    sender.thread.start()
    try:
        eventually(
            lambda: "spool write failed" in "".join(full.stderr),
            timeout=90,
            interval=0.1,
            what="the disk to fill",
        )
        # The bus and then the handoff queue fill behind the stuck write: both report it.
        eventually(
            lambda: LOOPBACK.get(f"{full.ops}/readyz").json().get("checks", {}),
            lambda failing: set(failing) == {"bus", "pipeline"},
            timeout=30,
            what="the bus and the pipeline to report backpressure",
        )
        assert full.process.poll() is None, full.logs()[-3000:]  # no crash
        assert post_session(full.otlp, "refused").status_code == 503
        sender.stop.set()
        sender.thread.join(10)
        assert sender.thread.is_alive() is False and sender.unanswered == 0
        assert set(sender.refused) == {503}, sender.refused  # backpressure, never an error
        ready = LOOPBACK.get(f"{full.ops}/readyz")
        assert ready.status_code == 503 and set(ready.json()["checks"]) == {"bus", "pipeline"}
        assert full.metric("turnwatch_bus_spool_full_total") >= 1
        for reason in ("queue_full", "sink_error"):
            assert full.metric("turnwatch_handoff_dropped_total", reason=reason) == 0
        assert LOOPBACK.get(f"{full.ops}/healthz").status_code == 200
    finally:
        code = full.terminate()
    logs = full.logs()
    assert code == 0, logs[-3000:]
    assert "spool write failed" in logs and "File too large" in logs
    assert "Traceback" not in logs
    lost = sum(int(n) for n in re.findall(r'"lost_sessions":\s*(\d+)', logs))

    # With room again, everything taken and not reported lost at shutdown is scored, once.
    roomy = Serve(data_dir, **small)
    try:
        expected = sender.acknowledged - lost
        scored_at_least(log, expected, timeout=60)
        bus_idle(roomy)
    finally:
        assert roomy.terminate() == 0
    after = scored(log)
    assert max(after.values()) == 1
    assert sum(after.values()) == expected
