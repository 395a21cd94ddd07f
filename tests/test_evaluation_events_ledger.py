"""Evaluation events and the exporter consumer's offset ledger: a score record's offset is not
committable until every event it produced is settled (accepted by the backend and marked sent,
or refused for good and counted), so a member killed with events queued leaves the record to
the partition's next owner. The records are delivered as the Kafka consumer delivers them
(`begin`, the handler, `end`), into a loopback OTLP logs receiver that a test can stall, with the
sent marks in the embedded default's SQLite session store.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator

import pytest
from prometheus_client import CollectorRegistry
from turnwatch.exporters.config import EvaluationEventsConfig
from turnwatch.exporters.evaluation_events import EvaluationEvents
from turnwatch.exporters.sessions.claims import PartKey, SentMarks
from turnwatch.exporters.sessions.database import SqliteDatabase

from tests.kafka_broker import with_bus
from tests.test_evaluation_events import (
    LogsReceiver,
    counted,
    expected_events,
    outcomes,
    record_with_metrics,
)
from turnwatch.app.roles import build_exporters
from turnwatch.app.settings import load_settings
from turnwatch.bus.ledger import OffsetLedger
from turnwatch.bus.records import SCORES
from turnwatch.scores import ScoreRecord

PARTITION = (SCORES, 0)


class WatchedMarks(SentMarks):
    """The store's sent marks, noting what the consumer could commit when each mark is made."""

    def __init__(self, db: SqliteDatabase, ledger: OffsetLedger, next_offset: int) -> None:
        super().__init__(db, 1)
        self.ledger = ledger
        self.next_offset = next_offset
        self.committable_at_mark: list[int] = []

    def mark(self, parts: Iterable[PartKey], now: float | None = None) -> None:
        self.committable_at_mark.append(self.ledger.committable(*PARTITION, self.next_offset))
        super().mark(parts, now)


class Exporter:
    """One exporter member's evaluation events on a partition of `turnwatch.scores`."""

    def __init__(self, receiver: LogsReceiver, db: SqliteDatabase, next_offset: int) -> None:
        self.ledger = OffsetLedger()
        self.ledger.assign([PARTITION])
        self.registry = CollectorRegistry()
        self.marks = WatchedMarks(db, self.ledger, next_offset)
        self.next_offset = next_offset
        config = EvaluationEventsConfig(endpoint=receiver.url, timeout_seconds=5)
        self.events = EvaluationEvents(config, self.registry, self.marks, self.ledger)

    async def deliver(self, record: ScoreRecord, offset: int) -> None:
        """As `RecordProcessor` hands a record to the handler."""
        self.ledger.begin(*PARTITION, offset)
        try:
            await self.events.handle(SCORES, record)
        finally:
            self.ledger.end()

    def committable(self) -> int:
        return self.ledger.committable(*PARTITION, self.next_offset)

    def move_away_and_back(self) -> None:
        """An eager rebalance in which the partition goes to another member, then returns."""
        self.ledger.revoke([PARTITION])
        self.ledger.assign([])
        self.ledger.assign([PARTITION])


@pytest.fixture
def db(tmp_path) -> SqliteDatabase:
    return SqliteDatabase(tmp_path / "sessions.db")


@pytest.fixture
def gate() -> Iterator[threading.Event]:
    opened = threading.Event()
    yield opened
    opened.set()


@pytest.fixture
def stalled(gate) -> Iterator[LogsReceiver]:
    """A backend that answers nothing until the gate opens."""
    receiver = LogsReceiver(gate=gate)
    yield receiver
    gate.set()
    receiver.close()


def other_session(record: ScoreRecord) -> ScoreRecord:
    return record.model_copy(update={"session_id": "sess-eval-2"})


async def test_a_record_is_committable_only_once_its_events_are_accepted_and_marked(
    db, gate, stalled
):
    member = Exporter(stalled, db, next_offset=7)
    first, second = record_with_metrics(), other_session(record_with_metrics())

    await member.deliver(first, 5)
    await member.deliver(second, 6)

    # Both handlers returned; the backend has accepted nothing: nothing past offset 5 commits.
    assert member.committable() == 5
    assert member.ledger.held() == 4  # two parts of each record
    gate.set()
    await member.events.drain(10)

    assert member.committable() == 7
    # Each record's parts were marked while it was still held (the first record's events went
    # in the first request, the second's, queued behind it, in the next).
    assert member.marks.committable_at_mark == [5, 6]
    assert member.marks.sent(first.session_id, first.revision) == {"checks", "judged"}
    assert member.marks.sent(second.session_id, second.revision) == {"checks", "judged"}
    assert counted(member.registry) == outcomes(exported=2 * expected_events(first))


async def test_a_refused_record_is_counted_released_and_not_marked(db):
    refusing = LogsReceiver(status=400)
    try:
        member = Exporter(refusing, db, next_offset=6)
        record = record_with_metrics()
        await member.deliver(record, 5)
        await member.events.drain(10)
    finally:
        refusing.close()

    assert member.committable() == 6
    assert member.marks.sent(record.session_id, record.revision) == frozenset()
    assert counted(member.registry) == outcomes(refused=expected_events(record))


async def test_a_replay_after_a_move_waits_for_the_events_still_in_flight(db, gate, stalled):
    member = Exporter(stalled, db, next_offset=6)
    record = record_with_metrics()

    await member.deliver(record, 5)
    member.move_away_and_back()  # the earlier hold no longer counts: the replay holds anew
    assert member.committable() == 6
    await member.deliver(record, 5)

    assert member.committable() == 5
    gate.set()
    await member.events.drain(10)

    assert member.committable() == 6
    assert len(stalled.accepted) == expected_events(record)  # sent once, not queued again
    assert counted(member.registry) == outcomes(exported=expected_events(record))


async def test_events_left_at_shutdown_keep_their_records_for_the_next_owner(db, stalled):
    member = Exporter(stalled, db, next_offset=7)
    record = record_with_metrics()

    await member.deliver(record, 5)
    await member.events.drain(0.5)  # the backend still answers nothing
    await member.deliver(other_session(record), 6)  # taken after the drain

    assert member.committable() == 5
    assert counted(member.registry) == outcomes(unsent_at_shutdown=2 * expected_events(record))
    assert member.marks.committable_at_mark == []


def test_an_exporter_holds_score_records_for_their_events_on_a_bus_that_keeps_them(tmp_path):
    events = {"exporter.evaluation_events": {"endpoint": "http://backend:4318/v1/logs"}}
    in_memory = load_settings(None, {"data_dir": str(tmp_path), **events})
    spooled = with_bus(in_memory, **{"embedded.spool": True})
    kafka = with_bus(in_memory, **{"kafka.bootstrap": "127.0.0.1:9092"})
    without_events = with_bus(
        load_settings(None, {"data_dir": str(tmp_path)}), **{"kafka.bootstrap": "127.0.0.1:9092"}
    )

    assert build_exporters(in_memory, CollectorRegistry()).ledger is None
    for keeping in (kafka, spooled):
        built = build_exporters(keeping, CollectorRegistry())
        assert built.ledger is not None and built.events is not None
        assert built.events.ledger is built.ledger
    assert build_exporters(without_events, CollectorRegistry()).ledger is None
