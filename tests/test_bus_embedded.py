"""The embedded bus: bounded, backpressure reaching the OTLP receiver, a spool across restarts."""

from __future__ import annotations

import asyncio
import threading
import time

import httpx

from tests.conftest import make_settings
from tests.kafka_broker import with_bus
from tests.otlp_requests import LOOPBACK, PROTOBUF, chat_span, encode, metric_value, trace_request
from tests.stages import all_roles_raw
from tests.waiting import eventually
from turnwatch.app.serve import BackgroundService
from turnwatch.bus.spool import DiskSpool, FifoFull, Item
from turnwatch.schema import Session


class GatedScorer:
    """A scorer that holds every session until the gate opens, and remembers what it saw."""

    def __init__(self, open_gate: bool = False) -> None:
        self.gate = threading.Event()
        if open_gate:
            self.gate.set()
        self.seen: list[tuple[str, int]] = []
        self.conversations: list[str] = []

    async def __call__(self, session: Session) -> list:
        while not self.gate.is_set():
            await asyncio.sleep(0.01)
        self.seen.append((session.session_id, session.revision))
        self.conversations.append(session.conversation_key)
        return []

    def wait_for(self, count: int, timeout: float = 15.0) -> None:
        eventually(
            lambda: len(set(self.seen)),
            lambda seen: seen >= count,
            timeout=timeout,
            what=f"{count} distinct sessions",
        )


def post_session(base: str, conversation: str, end: bool = True) -> httpx.Response:
    extra = {"turnwatch.session.end": "true"} if end else {}
    spans = [chat_span(conversation, 0), chat_span(conversation, 1, extra=extra)]
    body = encode(trace_request(spans), PROTOBUF)
    return LOOPBACK.post(
        f"{base}/v1/traces", content=body, headers={"Content-Type": PROTOBUF}, timeout=10
    )


def start(settings, scorer: GatedScorer) -> tuple[BackgroundService, str, str]:
    background = BackgroundService(settings, all_roles_raw(scorer=scorer))
    service = background.start()
    return (
        background,
        f"http://127.0.0.1:{service.ports.otlp_http}",
        f"http://127.0.0.1:{service.ports.ops}",
    )


def test_backpressure_from_the_embedded_bus_reaches_the_receiver(tmp_path):
    settings = make_settings(
        **{"data_dir": tmp_path, "handoff.queue_size": 4, "handoff.high_watermark": 0.5}
    )
    settings = with_bus(settings, **{"embedded.queue_size": 2, "shutdown_timeout_seconds": 1})
    scorer = GatedScorer()
    background, base, ops = start(settings, scorer)
    try:
        accepted = 0
        refused = None
        for number in range(40):
            response = post_session(base, f"pressure-{number}")
            if response.status_code == 503:
                refused = response
                break
            assert response.status_code == 200
            accepted += 1
            time.sleep(0.05)  # let the handoff task move sessions onto the bus
        assert refused is not None, "the receiver never pushed back"
        assert refused.headers["Retry-After"] == "2"
        assert 3 <= accepted <= 8
        ready = LOOPBACK.get(f"{ops}/readyz")
        assert ready.status_code == 503
        assert set(ready.json()["checks"]) == {"bus", "pipeline"}
        assert metric_value(ops, "turnwatch_bus_spool_full_total") >= 1

        scorer.gate.set()
        scorer.wait_for(accepted)
        assert LOOPBACK.get(f"{ops}/readyz").status_code == 200
        assert metric_value(ops, "turnwatch_handoff_dropped_total") == 0
        # Two groups read sessions: the scorer, and the exporter for the session store.
        processed = metric_value(
            ops,
            "turnwatch_bus_records_consumed_total",
            topic="turnwatch.sessions",
            outcome="processed",
        )
        assert processed == 2 * accepted
    finally:
        scorer.gate.set()
        background.stop()


def test_restart_with_the_spool_loses_no_closed_session(tmp_path):
    settings = make_settings(**{"data_dir": tmp_path, "sessions.idle_timeout_seconds": 30})
    # The first run's scorer never finishes: each shutdown wait runs to its timeout, kept short.
    settings = with_bus(settings, **{"embedded.spool": True, "shutdown_timeout_seconds": 0.3})
    first = GatedScorer()
    background, base, ops = start(settings, first)
    try:
        for number in range(6):
            assert post_session(base, f"spooled-{number}").status_code == 200
        # Still open at shutdown: closed by the drain, and it must survive too.
        assert post_session(base, "open-at-shutdown", end=False).status_code == 200
        eventually(
            lambda: metric_value(ops, "turnwatch_bus_queue_depth", topic="turnwatch.sessions"),
            lambda depth: depth >= 6,
            timeout=10,
            what="six sessions queued on the bus",
        )
    finally:
        background.stop()  # the scorer is stuck on the first session: nothing was processed
    assert first.seen == []
    assert list((tmp_path / "spool" / "embedded" / "turnwatch.sessions").glob("*.seg"))

    second = GatedScorer(open_gate=True)
    background, base, ops = start(settings, second)
    try:
        second.wait_for(7)
        assert len(second.seen) == 7
        assert metric_value(ops, "turnwatch_bus_queue_depth", topic="turnwatch.sessions") == 0
    finally:
        background.stop()

    third = GatedScorer(open_gate=True)
    background, base, ops = start(settings, third)
    try:
        # The spool is first in, first out: a record delivered again would come before this one.
        assert post_session(base, "after-restart").status_code == 200
        eventually(lambda: third.conversations, lambda seen: "after-restart" in seen)
        assert third.conversations == ["after-restart"]  # acknowledged records are not redelivered
    finally:
        background.stop()


def test_disk_spool_keeps_order_across_segments_and_cuts_a_torn_tail(tmp_path):
    directory = tmp_path / "spool"
    spool = DiskSpool(directory, max_bytes=100_000, segment_bytes=300)
    for number in range(50):
        spool.append(Item("turnwatch.sessions", f"k{number}", b'{"n":%d}' % number))
    for number in range(20):
        item = spool.peek()
        assert item is not None and item.key == f"k{number}"
        spool.pop()
    spool.close()
    assert len(list(directory.glob("*.seg"))) > 2
    last = sorted(directory.glob("*.seg"))[-1]
    with open(last, "ab") as handle:
        handle.write(b"\x00\x00\x00\x40torn")  # a record cut short by a crash
    spool = DiskSpool(directory, max_bytes=100_000, segment_bytes=300)
    assert len(spool) == 30
    keys = []
    while (item := spool.peek()) is not None:
        keys.append(item.key)
        spool.pop()
    assert keys == [f"k{number}" for number in range(20, 50)]
    spool.close()

    small = DiskSpool(tmp_path / "small", max_bytes=60, segment_bytes=1000)
    small.append(Item("t", "k", b"x" * 20))
    try:
        small.append(Item("t", "k", b"x" * 20))
        raise AssertionError("the spool should be full")
    except FifoFull:
        pass
    small.close()
