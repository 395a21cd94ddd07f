"""Evaluation events across exporter members on the embedded default's SQLite session store,
into loopback OTLP logs receivers (one per member, so each member's sends are told apart).

Two members over one store stand for a partition's owner and its next owner after a move: a
part the first sent (and the store marked) is not sent again by the second; a part the first
claimed the count of but never sent (it died in between), or sent and saw refused, is sent by
the second exactly once; both members give each event the same id. A store that cannot be
read or written sends the events anyway and counts the failure, and a part left unmarked is
sent again by the next owner.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator

import pytest
from prometheus_client import CollectorRegistry
from turnwatch.exporters.config import EvaluationEventsConfig, ExporterConfig
from turnwatch.exporters.evaluation_events import EvaluationEvents
from turnwatch.exporters.score_exporter import ScoreExporter
from turnwatch.exporters.sessions.claims import SentMarks
from turnwatch.exporters.sessions.database import SqliteDatabase
from turnwatch.exporters.sessions.store import SessionStore

from tests.test_evaluation_events import LogsReceiver, record_with_metrics
from turnwatch.bus.records import SCORES
from turnwatch.scores import Part, ScoreRecord

UID = "log.record.uid"


@pytest.fixture
def receivers() -> Iterator[tuple[LogsReceiver, LogsReceiver]]:
    running = (LogsReceiver(), LogsReceiver())
    yield running
    for receiver in running:
        receiver.server.shutdown()
        receiver.server.server_close()


@pytest.fixture
def store(tmp_path) -> SessionStore:
    return SessionStore(SqliteDatabase(tmp_path / "sessions.db"))


class Member:
    """One exporter member's score counting and evaluation events over the shared store."""

    def __init__(self, store: SessionStore, receiver: LogsReceiver) -> None:
        self.registry = CollectorRegistry()
        self.scores = ScoreExporter(self.registry, ExporterConfig(), store)
        config = EvaluationEventsConfig(endpoint=receiver.url, timeout_seconds=5)
        self.events = EvaluationEvents(config, self.registry, SentMarks(store.db, 1))

    def take(self, record: ScoreRecord) -> None:
        """The exporter role's chain on one delivery: count, then queue the events; then the
        sender's drain (a running member sends the same in the background)."""

        async def run() -> None:
            await self.scores.handle(SCORES, record)
            await self.events.handle(SCORES, record)
            await self.events.drain(10)

        asyncio.run(run())

    def count(self, family: str, label: str, value: str) -> float:
        return self.registry.get_sample_value(family, {label: value}) or 0.0

    def outcome(self, outcome: str) -> float:
        return self.count("turnwatch_evaluation_events_total", "outcome", outcome)

    def mark_failures(self, step: str) -> float:
        return self.count("turnwatch_evaluation_sent_mark_failures_total", "step", step)


def ids(receiver: LogsReceiver) -> list[str]:
    return [event[UID] for event in receiver.events]


def expected_events(record: ScoreRecord) -> int:
    return len(list(record.results())) + len(record.metrics)


def test_events_one_member_sent_are_not_sent_again_by_the_next_owner(store, receivers):
    first_receiver, next_receiver = receivers
    first, next_owner = Member(store, first_receiver), Member(store, next_receiver)
    record = record_with_metrics()

    first.take(record)
    next_owner.take(record)  # redelivered after the partition moved

    sent = expected_events(record)
    assert len(first_receiver.events) == sent and first.outcome("exported") == sent
    assert next_receiver.events == []
    assert next_owner.outcome("already_sent") == sent and next_owner.outcome("exported") == 0


def test_a_complete_record_after_a_move_sends_only_the_part_not_sent_before(store, receivers):
    first_receiver, next_receiver = receivers
    first, next_owner = Member(store, first_receiver), Member(store, next_receiver)
    record = record_with_metrics()
    checks = record.model_copy(update={"part": Part.CHECKS, "metrics": []})

    first.take(checks)
    next_owner.take(record)  # the complete record, its checks sent by the first member
    next_owner.take(record)

    names = [event["gen_ai.evaluation.name"] for event in next_receiver.events]
    assert names == ["turn_relevancy", "knowledge_retention"]
    assert len(set(ids(first_receiver) + ids(next_receiver))) == expected_events(record)


def test_a_member_that_claimed_the_count_and_died_before_sending_leaves_them_to_the_next(
    store, receivers
):
    _, next_receiver = receivers
    dead = ScoreExporter(CollectorRegistry(), ExporterConfig(), store)
    next_owner = Member(store, next_receiver)
    record = record_with_metrics()

    asyncio.run(dead.handle(SCORES, record))  # counted and claimed; killed before its events
    next_owner.take(record)
    next_owner.take(record)

    assert next_owner.count("turnwatch_exporter_records_total", "outcome", "duplicate") == 2
    assert len(next_receiver.events) == expected_events(record)
    assert len(set(ids(next_receiver))) == expected_events(record)


def test_events_refused_by_the_backend_are_sent_by_the_next_owner_with_the_same_ids(
    store, receivers
):
    refusing = LogsReceiver(status=400)  # refused for good: counted, left unmarked
    try:
        _, next_receiver = receivers
        first, next_owner = Member(store, refusing), Member(store, next_receiver)
        record = record_with_metrics()
        first.take(record)
        next_owner.take(record)
    finally:
        refusing.close()

    sent = expected_events(record)
    assert first.outcome("refused") == sent
    assert len(next_receiver.events) == sent == next_owner.outcome("exported")
    assert sorted(ids(refusing)) == sorted(ids(next_receiver))
    by_name = {event["gen_ai.evaluation.name"]: event[UID] for event in next_receiver.events}
    assert len(set(by_name.values())) == sent  # one id per result
    # Another revision of the session is other events.
    later = record.model_copy(update={"revision": record.revision + 1})
    first_receiver = receivers[0]
    Member(store, first_receiver).take(later)
    assert not set(ids(first_receiver)) & set(ids(next_receiver))


def test_a_store_that_cannot_mark_keeps_the_events_for_the_next_owner(store, receivers, caplog):
    first_receiver, next_receiver = receivers
    first, next_owner = Member(store, first_receiver), Member(store, next_receiver)
    record = record_with_metrics()
    refuse = (
        "CREATE TRIGGER refuse BEFORE INSERT ON sent_events BEGIN SELECT RAISE(ABORT, 'full'); END"
    )
    store.db.execute(refuse)

    with caplog.at_level(logging.ERROR, "turnwatch.exporters.evaluation_events"):
        first.take(record)
    store.db.execute("DROP TRIGGER refuse")
    next_owner.take(record)
    third = Member(store, first_receiver)
    third.take(record)  # marked by the next owner now

    sent = expected_events(record)
    assert first.outcome("exported") == sent and first.mark_failures("mark") == 1
    [logged] = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert (
        logged.getMessage()
        == "evaluation events sent but not marked: a redelivery sends them again"
    )
    assert sorted(ids(next_receiver)) == sorted(ids(first_receiver))  # sent again, same ids
    assert third.outcome("already_sent") == sent and third.outcome("exported") == 0


def test_a_store_that_cannot_be_read_sends_the_events_rather_than_losing_them(
    store, receivers, caplog
):
    first_receiver, _ = receivers
    member = Member(store, first_receiver)
    record = record_with_metrics()
    store.db.execute("ALTER TABLE sent_events RENAME TO sent_events_away")

    with caplog.at_level(logging.ERROR, "turnwatch.exporters.evaluation_events"):
        asyncio.run(_events_only(member, record))

    sent = expected_events(record)
    assert len(first_receiver.events) == sent
    assert member.mark_failures("read") == 1 and member.mark_failures("mark") == 1
    messages = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert messages[0] == "sent marks unreadable: evaluation events sent without checking them"


async def _events_only(member: Member, record: ScoreRecord) -> None:
    await member.events.handle(SCORES, record)
    await member.events.drain(10)
