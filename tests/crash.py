"""SIGKILL during a burst: `turnwatch serve` (embedded spool on, and the write-ahead log unless a
run is the baseline without it) is killed at a chosen moment while a client sends conversations,
started again on the same data directory, and every conversation is counted where it comes out
scored.

A conversation spans two requests (its opening exchange, then its closing one with the end
marker), and each request carries the openings of two conversations and the closings of the two
before them, as a batching exporter mixes conversations. The client counts, on its side, which
conversations were wholly or partly acknowledged (200). Used by tests/test_reliability_crash.py
(exact assertions) and benchmarks/crash.py (a table over runs).
"""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from turnwatch.collector.deid.secret import session_id_key
from turnwatch.collector.session_keys import session_id_for

from tests.conftest import settled
from tests.otlp_requests import LOOPBACK, PROTOBUF, chat_span, trace_request
from tests.serve_process import Serve, bus_idle, scored
from tests.waiting import eventually

SERVICE = "crash-bot"  # session ids are scoped by the service that named the conversation

PER_REQUEST = 2
END = {"turnwatch.session.end": "true"}
SECRET = "crash-run-deployment-secret-0123456789"
ID_KEY = session_id_key(SECRET.encode())
CRASH_ENV = {
    "TURNWATCH_DEID__SECRET": SECRET,  # so the test knows the session-id key the server uses
    "TURNWATCH_BUS__SCORER_PROCESSOR": "tests.kafka_broker:score_echo",
    "TURNWATCH_TEST_SCORER_DELAY": "0.01",
    # Longer than any stall between a conversation's two requests on a loaded machine: at the
    # serve tests' 0.5 s one closed idle after its opening and came back as a second revision.
    "TURNWATCH_SESSIONS__IDLE_TIMEOUT_SECONDS": "5",
}


@dataclass(frozen=True)
class BurstRequest:
    body: bytes
    opens: tuple[str, ...]
    closes: tuple[str, ...]


def burst(prefix: str, conversations: int) -> list[BurstRequest]:
    keys = [f"{prefix}-{number}" for number in range(conversations)]
    groups = [tuple(keys[i : i + PER_REQUEST]) for i in range(0, conversations, PER_REQUEST)]
    requests = []
    for index in range(len(groups) + 1):
        opens = groups[index] if index < len(groups) else ()
        closes = groups[index - 1] if index > 0 else ()
        spans = [chat_span(key, 0) for key in opens]
        spans += [chat_span(key, 1, extra=END) for key in closes]
        body = trace_request(spans, SERVICE).SerializeToString()
        requests.append(BurstRequest(body, opens, closes))
    return requests


class BurstClient:
    """Posts the burst's requests one after another until one fails (the server was killed)."""

    def __init__(self, base: str, requests: list[BurstRequest]) -> None:
        self.base = base
        self.requests = requests
        self.acknowledged = 0
        self.opened: set[str] = set()
        self.closed: set[str] = set()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        for request in self.requests:
            try:
                response = LOOPBACK.post(
                    f"{self.base}/v1/traces",
                    content=request.body,
                    headers={"Content-Type": PROTOBUF},
                    timeout=30,
                )
            except httpx.HTTPError:
                return  # killed: this request may or may not have been stored
            if response.status_code != 200:
                return
            self.acknowledged += 1
            self.opened.update(request.opens)
            self.closed.update(request.closes)


@dataclass
class CrashRun:
    requests: int
    kill_after: int
    acknowledged: int
    whole: set[str]
    """Session ids of conversations whose two requests were both answered 200."""
    partial: set[str]
    """... whose first request was answered 200, the second not."""
    deliveries: Counter[tuple[str, int]] = field(default_factory=Counter)
    """Score records the exporter's tap was given, per (session id, revision), both processes."""
    before_restart: Counter[tuple[str, int]] = field(default_factory=Counter)
    """... of them, those given to the killed process."""
    exported_after: float = 0.0
    """Score records the restarted process counted (`turnwatch_exporter_records_total`) ..."""
    duplicates_after: float = 0.0
    """... and those it found counted already."""
    replayed_frames: float = 0.0
    replay_skipped: float = 0.0
    recovery_seconds: float = 0.0

    @property
    def scored(self) -> set[str]:
        return {sid for sid, _revision in self.deliveries}

    @property
    def lost(self) -> set[str]:
        return (self.whole | self.partial) - self.scored

    @property
    def redelivered(self) -> set[str]:
        """Sessions with a revision given to the tap more than once. The bus is at-least-once
        across a kill (README: crash recovery), so this may happen; counting it twice may not."""
        return {sid for (sid, _revision), count in self.deliveries.items() if count > 1}

    @property
    def after_restart(self) -> Counter[tuple[str, int]]:
        return self.deliveries - self.before_restart

    @property
    def counted_twice(self) -> float:
        """Revisions the restarted process counted although the killed one had counted them.
        A revision the tap saw before the kill was counted before it (the tap runs after the
        exporters), so the restart may count at most the revisions new to it."""
        new = set(self.after_restart) - set(self.before_restart)
        return max(0.0, self.exported_after - len(new))

    @property
    def split(self) -> set[str]:
        """Sessions scored as more than one revision: a conversation the restart cut in two."""
        revisions = Counter(sid for sid, _revision in self.deliveries)
        return {sid for sid, count in revisions.items() if count > 1}


@dataclass(frozen=True)
class KillPoint:
    after: int
    """Acknowledged requests before the kill ..."""
    pause: float
    """... and seconds after that answer (a moment in the middle of the next request, say)."""


def random_kill_point(rng: random.Random, conversations: int) -> KillPoint:
    requests = len(range(0, conversations, PER_REQUEST)) + 1
    return KillPoint(rng.randint(1, requests - 1), rng.uniform(0, 0.02))


def crash_run(directory: Path, conversations: int, kill: KillPoint, wal: bool = True) -> CrashRun:
    """One burst, one SIGKILL at `kill`, one restart; counted once all is quiet."""
    requests = burst(directory.name, conversations)
    kill_after = kill.after
    data_dir = directory / "data"
    env = {**CRASH_ENV, "TURNWATCH_WAL__ENABLED": "true" if wal else "false"}
    first = Serve(data_dir, **env)
    client = BurstClient(first.otlp_url, requests)
    client.thread.start()
    eventually(
        lambda: client.acknowledged,
        lambda acknowledged: acknowledged >= kill_after or not client.thread.is_alive(),
        timeout=120,
        interval=0.001,
        what=f"{kill_after} requests acknowledged",
    )
    time.sleep(kill.pause)
    first.kill()
    client.thread.join(30)
    score_log = directory / "scored.log"
    run = CrashRun(
        requests=len(requests),
        kill_after=kill_after,
        acknowledged=client.acknowledged,
        whole={session_id_for(SERVICE, key, ID_KEY) for key in client.opened & client.closed},
        partial={session_id_for(SERVICE, key, ID_KEY) for key in client.opened - client.closed},
        before_restart=scored(score_log),
    )

    started = time.monotonic()
    second = Serve(data_dir, **env)  # its banner comes once the log is replayed
    try:
        # Nothing open or queued in the collector, nothing on the bus: the score log is final.
        settled(second.ops_url, timeout=120)
        bus_idle(second)
        run.recovery_seconds = time.monotonic() - started
        run.deliveries = scored(score_log)
        exported = "turnwatch_exporter_records_total"
        run.exported_after = second.metric(exported, outcome="exported")
        run.duplicates_after = second.metric(exported, outcome="duplicate")
        run.replayed_frames = second.metric("turnwatch_wal_replayed_frames_total", kind="request")
        run.replay_skipped = second.metric("turnwatch_wal_replay_skipped_sessions_total")
    finally:
        code = second.terminate()
    assert code == 0, second.logs()[-3000:]
    return run
