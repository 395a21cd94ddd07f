"""`turnwatch serve` (all roles, embedded bus) as a user runs it, under process-level faults.

- SIGTERM while a client is sending: the process drains, flushes and exits 0; with the embedded
  spool on, what was not scored yet stays on disk and a restart scores it, each session once.
- The disk is full under the spool (RLIMIT_FSIZE in the child, SIGXFSZ ignored, so writes fail
  with EFBIG as on a full disk): a clear error in the log, backpressure (OTLP 503) instead of a
  crash or a silent stall, SIGTERM still exits 0, and a restart with room scores what was taken.

Sessions are counted where they leave the pipeline (tests/serve_process.py).
"""

from __future__ import annotations

import re
import threading
import time

import httpx
import pytest

from tests.otlp_requests import LOOPBACK
from tests.serve_process import Serve, bus_idle, scored, scored_at_least
from tests.test_bus_embedded import post_session
from tests.waiting import eventually
from turnwatch.app.cli import EXIT_DROPPED_AT_SHUTDOWN

pytestmark = pytest.mark.slow  # `turnwatch serve` subprocesses, filled to a full disk


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


def test_sigterm_during_traffic_exits_0_and_a_restart_scores_the_rest_once(tmp_path):
    data_dir, log = tmp_path / "data", tmp_path / "scored.log"
    # A slow scorer, so a backlog sits in the spool when SIGTERM comes.
    slow = {
        "TURNWATCH_BUS__SCORER_PROCESSOR": "tests.kafka_broker:score_echo",
        "TURNWATCH_TEST_SCORER_DELAY": "0.1",
    }
    first = Serve(data_dir, **slow)
    sender = Sender(first.otlp_url, "sigterm")
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
        # The file size limit is the process's, for every file: the session store's SQLite file
        # (its schema alone, with the count claims and sent marks, is past it) would fail first.
        # A store that cannot be written has its own behaviour (it holds counting); this test is
        # about the spool.
        "TURNWATCH_SESSION_STORE__ENABLED": "false",
    }
    full = Serve(data_dir, file_size_limit=96 * 1024, **small)
    sender = Sender(full.otlp_url, "disk-full", pause=0.01)
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
            lambda: LOOPBACK.get(f"{full.ops_url}/readyz").json().get("checks", {}),
            lambda failing: set(failing) == {"bus", "pipeline"},
            timeout=30,
            what="the bus and the pipeline to report backpressure",
        )
        assert full.process.poll() is None, full.logs()[-3000:]  # no crash
        assert post_session(full.otlp_url, "refused").status_code == 503
        sender.stop.set()
        sender.thread.join(10)
        assert sender.thread.is_alive() is False and sender.unanswered == 0
        assert set(sender.refused) == {503}, sender.refused  # backpressure, never an error
        ready = LOOPBACK.get(f"{full.ops_url}/readyz")
        assert ready.status_code == 503 and set(ready.json()["checks"]) == {"bus", "pipeline"}
        assert full.metric("turnwatch_bus_spool_full_total") >= 1
        for reason in ("queue_full", "sink_error"):
            assert full.metric("turnwatch_handoff_dropped_total", reason=reason) == 0
        assert LOOPBACK.get(f"{full.ops_url}/healthz").status_code == 200
    finally:
        code = full.terminate()
    logs = full.logs()
    assert "spool write failed" in logs and "File too large" in logs
    assert "Traceback" not in logs
    lost = sum(int(n) for n in re.findall(r'"lost_sessions":\s*(\d+)', logs))
    assert code == (EXIT_DROPPED_AT_SHUTDOWN if lost else 0), logs[-3000:]

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
