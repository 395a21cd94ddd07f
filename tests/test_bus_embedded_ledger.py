"""The embedded bus with its spool and an offset ledger: a handler may hold a record past its
return, and the bus acknowledges (moves the spool's cursor past) only the records below the oldest
one held, so a restart delivers the rest again; a held record keeps its room, so a hold that lasts
fills the queue and publishing waits instead of the spool growing. Real spool files on disk, the
bus driven on an event loop as `turnwatch serve` drives it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from tests.session_records import healthy
from tests.test_exporter import score_record
from turnwatch.bus.config import BusConfig, EmbeddedBusConfig
from turnwatch.bus.embedded import EmbeddedBus
from turnwatch.bus.ledger import OffsetLedger, Position
from turnwatch.bus.metrics import BusMetrics
from turnwatch.bus.records import SCORES, SESSIONS, Output, Record
from turnwatch.bus.spool import DiskSpool, Item
from turnwatch.scores import ScoreRecord

GROUP = "exporter"


def spooled_bus(directory: Path, queue_size: int = 100) -> EmbeddedBus:
    embedded = EmbeddedBusConfig(spool=True, queue_size=queue_size)
    return EmbeddedBus(BusConfig(embedded=embedded), BusMetrics(CollectorRegistry()), directory)


class Holding:
    """An exporter-like handler: holds the records of the sessions named, notes every delivery."""

    def __init__(self, ledger: OffsetLedger, hold: set[str]) -> None:
        self.ledger = ledger
        self.hold = hold
        self.seen: list[str] = []
        self.held: dict[str, Position] = {}

    async def __call__(self, topic: str, record: Record) -> list[Output]:
        assert isinstance(record, ScoreRecord)
        self.seen.append(record.session_id)
        if record.session_id in self.hold:
            position = self.ledger.in_hand()
            self.ledger.hold(position)
            self.held[record.session_id] = position
        return []

    def release(self, session_id: str) -> None:
        self.ledger.release([self.held.pop(session_id)])


async def until(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(0.01)


async def consuming(
    bus: EmbeddedBus,
    handler: Holding,
    ledger: OffsetLedger | None,
    steps: Callable[[asyncio.Event], Awaitable[None]],
) -> None:
    stop = asyncio.Event()
    consumer = asyncio.create_task(bus.consume([SCORES], GROUP, handler, stop, ledger=ledger))
    try:
        await steps(stop)
    finally:
        stop.set()
        await consumer
        await bus.close()


def unacknowledged(bus: EmbeddedBus) -> int:
    return len(bus._queue(SCORES, GROUP).fifo)


def test_nothing_at_or_past_a_held_record_is_acknowledged_and_a_restart_delivers_it_again(
    tmp_path,
):
    sessions = [f"s-{number}" for number in range(6)]
    ledger = OffsetLedger()
    gained: list[set[tuple[str, int]]] = []

    async def restore(partitions: set[tuple[str, int]]) -> None:
        gained.append(partitions)

    ledger.on_gained = restore
    handler = Holding(ledger, hold={"s-1", "s-3"})
    bus = spooled_bus(tmp_path)

    async def first_run(stop: asyncio.Event) -> None:
        for session in sessions:
            await bus.publish(SCORES, session, score_record(session))
        await until(lambda: len(handler.seen) == 6)
        assert gained == [{(SCORES, 0)}]  # its one partition, before any record
        assert bus._queue(SCORES, GROUP).fifo.waiting == 0
        assert unacknowledged(bus) == 5  # s-0 acknowledged; s-1 held, s-2..s-5 behind it
        assert bus.readiness() is None
        handler.release("s-1")
        await until(lambda: unacknowledged(bus) == 3)  # up to s-3, the next hold
        assert await bus.idle(1.0)  # consumers caught up: what is held is not waiting

    asyncio.run(consuming(bus, handler, ledger, first_run))
    assert handler.seen == sessions

    # s-3 is still held when the process goes: the restart delivers it and what came after it,
    # in order, and nothing acknowledged before.
    again = OffsetLedger()
    restarted = Holding(again, hold=set())
    bus = spooled_bus(tmp_path)

    async def second_run(stop: asyncio.Event) -> None:
        await until(lambda: len(restarted.seen) == 3)
        await until(lambda: unacknowledged(bus) == 0)

    asyncio.run(consuming(bus, restarted, again, second_run))
    assert restarted.seen == ["s-3", "s-4", "s-5"]


def test_a_hold_that_lasts_fills_the_queue_and_publishing_waits_until_its_release(tmp_path):
    ledger = OffsetLedger()
    handler = Holding(ledger, hold={"s-0"})
    bus = spooled_bus(tmp_path, queue_size=3)
    full = bus.metrics.spool_full

    async def steps(stop: asyncio.Event) -> None:
        for number in range(3):
            await bus.publish(SCORES, f"s-{number}", score_record(f"s-{number}"))
        await until(lambda: len(handler.seen) == 3)
        assert unacknowledged(bus) == 3  # all taken, none acknowledged: the queue is full
        assert bus.readiness() == f"embedded bus saturated: {SCORES}"
        blocked = asyncio.create_task(bus.publish(SCORES, "s-3", score_record("s-3")))
        await until(lambda: full._value.get() == 1)  # it found no room and waits
        assert len(handler.seen) == 3
        handler.release("s-0")
        await asyncio.wait_for(blocked, 5)
        await until(lambda: handler.seen == ["s-0", "s-1", "s-2", "s-3"])
        await until(lambda: unacknowledged(bus) == 0)

    asyncio.run(consuming(bus, handler, ledger, steps))


def test_without_a_ledger_each_record_is_acknowledged_once_its_handler_returned(tmp_path):
    handler = Holding(OffsetLedger(), hold=set())
    bus = spooled_bus(tmp_path)

    async def steps(stop: asyncio.Event) -> None:
        for number in range(3):
            await bus.publish(SCORES, f"s-{number}", score_record(f"s-{number}"))
        await until(lambda: len(handler.seen) == 3)
        await until(lambda: unacknowledged(bus) == 0)

    asyncio.run(consuming(bus, handler, None, steps))
    restarted = Holding(OffsetLedger(), hold=set())
    bus = spooled_bus(tmp_path)

    async def nothing_again(stop: asyncio.Event) -> None:
        await bus.publish(SCORES, "s-after", score_record("s-after"))
        await until(lambda: restarted.seen == ["s-after"])

    asyncio.run(consuming(bus, restarted, None, nothing_again))


def test_with_a_ledger_a_groups_topics_take_turns_so_the_record_in_hand_is_the_right_one(
    tmp_path,
):
    """The exporter reads sessions beside scores; a score's handler that waits (on the store, on
    room in the events queue) must still find its own record in hand, not a session's."""
    ledger = OffsetLedger()
    gate = asyncio.Event()
    waiting = asyncio.Event()
    in_hand: list[Position] = []

    async def handler(topic: str, record: Record) -> list[Output]:
        if isinstance(record, ScoreRecord):
            waiting.set()
            await gate.wait()
        in_hand.append(ledger.in_hand())
        return []

    bus = spooled_bus(tmp_path)
    consumed = bus.metrics.consumed

    async def steps() -> None:
        stop = asyncio.Event()
        topics = [SESSIONS, SCORES]
        consumer = asyncio.create_task(bus.consume(topics, GROUP, handler, stop, ledger=ledger))
        await bus.publish(SCORES, "s-0", score_record("s-0"))
        await asyncio.wait_for(waiting.wait(), 5)
        await bus.publish(SESSIONS, "s-1", healthy("s-1"))
        for _ in range(50):  # room for the sessions' loop to run, were it not its turn
            await asyncio.sleep(0)
        gate.set()
        await until(lambda: len(in_hand) == 2)
        stop.set()
        await consumer
        await bus.close()

    asyncio.run(steps())
    assert in_hand == [Position(SCORES, 0, 0), Position(SESSIONS, 0, 0)]
    assert consumed.labels(SCORES, "processed")._value.get() == 1
    assert consumed.labels(SESSIONS, "processed")._value.get() == 1


def test_the_embedded_bus_in_memory_refuses_a_ledger(tmp_path):
    bus = EmbeddedBus(BusConfig(), BusMetrics(CollectorRegistry()), tmp_path)
    handler = Holding(OffsetLedger(), hold=set())

    async def consume() -> None:
        await bus.consume([SCORES], GROUP, handler, asyncio.Event(), ledger=OffsetLedger())

    with pytest.raises(ValueError, match="embedded spool"):
        asyncio.run(consume())


def test_disk_spool_keeps_taken_records_until_acknowledged_across_segments_and_restarts(tmp_path):
    directory = tmp_path / "spool"
    spool = DiskSpool(directory, max_bytes=100_000, segment_bytes=200, max_records=40)
    for number in range(30):
        spool.append(Item(SCORES, f"k{number}", b'{"n":%d}' % number))
    segments = len(list(directory.glob("*.seg")))
    assert segments > 3
    for number in range(20):
        item = spool.peek()
        assert item is not None and item.key == f"k{number}"
        spool.take()
    # Taken, not acknowledged: their room and their segments stay.
    assert (len(spool), spool.waiting) == (30, 10)
    assert len(list(directory.glob("*.seg"))) == segments
    spool.acknowledge(12)
    assert (len(spool), spool.waiting) == (18, 10)
    assert len(list(directory.glob("*.seg"))) < segments  # the acknowledged ones are deleted
    spool.close()

    reopened = DiskSpool(directory, max_bytes=100_000, segment_bytes=200, max_records=40)
    keys = []
    while (item := reopened.peek()) is not None:
        keys.append(item.key)
        reopened.take()
    assert keys == [f"k{number}" for number in range(12, 30)]  # taken but not acknowledged too
    reopened.acknowledge(len(keys))
    assert (len(reopened), reopened.waiting) == (0, 0)
    assert len(list(directory.glob("*.seg"))) == 1
    reopened.close()


def test_publish_takes_a_session_into_every_group_queue_without_yielding(tmp_path):
    # The collector writes its log's done mark right after `publish` returns; had publish
    # waited for a queue's lock (a consumer just woken holds it), other tasks would run between
    # the queues taking the session and the mark, and a kill there republishes it.
    bus = spooled_bus(tmp_path)
    seen: dict[str, list[str]] = {"scorer": [], "exporter": []}

    def recording(group: str):
        async def handle(topic: str, record) -> list:
            seen[group].append(record.session_id)
            return []

        return handle

    async def steps() -> None:
        stop = asyncio.Event()
        consumers = []
        for group in seen:
            bus.subscribe([SESSIONS], group)
            consumer = bus.consume([SESSIONS], group, recording(group), stop)
            consumers.append(asyncio.create_task(consumer))
        await asyncio.sleep(0.05)  # both consumers waiting on an empty queue
        held = bus._queue(SESSIONS, "exporter").changed  # as a woken consumer holds it
        await held.acquire()
        publishing = asyncio.ensure_future(bus.publish(SESSIONS, "s-1", healthy("s-1")))
        await asyncio.sleep(0)  # one step of the loop
        assert publishing.done() and publishing.exception() is None
        held.release()
        await until(lambda: seen == {"scorer": ["s-1"], "exporter": ["s-1"]})
        stop.set()
        await asyncio.gather(*consumers)
        await bus.close()

    asyncio.run(steps())
