"""Typed records on every topic: each topic has its model, every record is validated into it
before a handler sees it, and a processor can only publish a topic's own model."""

from __future__ import annotations

import json

import pytest
from prometheus_client import CollectorRegistry

from tests.test_exporter import score_record
from tests.test_scorers_builders import session, user
from turnwatch.bus.base import RecordProcessor
from turnwatch.bus.config import BusConfig
from turnwatch.bus.embedded import EmbeddedBus
from turnwatch.bus.metrics import BusMetrics
from turnwatch.bus.records import (
    DEAD_LETTER,
    INCIDENTS,
    SCORES,
    SESSIONS,
    TOPIC_MODELS,
    TOPICS,
    DeadLetter,
    Output,
    WrongRecord,
    check_output,
    encode,
)
from turnwatch.incidents import Incident
from turnwatch.revisions import SeenRevisions
from turnwatch.schema import Session
from turnwatch.scores import ScoreRecord

LIMIT = 1 << 20


def bus_and_processor(handler) -> tuple[EmbeddedBus, RecordProcessor]:
    bus = EmbeddedBus(BusConfig(), BusMetrics(CollectorRegistry()), None)
    return bus, RecordProcessor(bus, handler, LIMIT, SeenRevisions(10))


def records() -> dict[str, object]:
    built = session(user("hi"), session_id="s-1")
    score = score_record("s-1")
    return {
        SESSIONS: built,
        SCORES: score,
        INCIDENTS: Incident.of(built, score, ["critical_failure"]),
    }


def test_every_topic_has_its_model():
    assert set(TOPIC_MODELS) == set(TOPICS)
    assert TOPIC_MODELS[SESSIONS] is Session
    assert TOPIC_MODELS[SCORES] is ScoreRecord
    assert TOPIC_MODELS[INCIDENTS] is Incident
    assert TOPIC_MODELS[DEAD_LETTER] is DeadLetter


async def test_handlers_receive_models_and_invalid_records_are_dead_lettered():
    seen: list[object] = []

    async def handler(topic, record):
        seen.append(record)
        return []

    bus, processor = bus_and_processor(handler)
    published = records()
    for offset, (topic, record) in enumerate(published.items()):
        assert await processor.handle(topic, "s-1", encode(record, LIMIT), 0, offset) == "processed"
    assert seen == list(published.values())

    for offset, topic in enumerate((SESSIONS, SCORES, INCIDENTS), start=10):
        value = json.dumps({"schema_version": 1, "session_id": "s-1", "revision": "two"}).encode()
        assert await processor.handle(topic, "s-1", value, 0, offset) == "dead_lettered"
    letters = [letter for _, letter in bus.dead_letters]
    assert [(d.source_topic, d.reason) for d in letters] == [
        (SESSIONS, "invalid"),
        (SCORES, "invalid"),
        (INCIDENTS, "invalid"),
    ]
    assert bus.metrics.dead_lettered.labels("invalid")._value.get() == 3
    assert len(seen) == 3  # the handler never saw them


def test_an_incident_is_one_session_revision():
    built = session(user("hi"), session_id="s-1")
    with pytest.raises(ValueError, match="the score record is the session revision's own"):
        Incident.of(built, score_record("s-2"), ["critical_failure"])
    with pytest.raises(ValueError, match="at least 1 item"):
        Incident.of(built, score_record("s-1"), [])


async def test_a_processor_publishing_a_dict_or_another_topics_model_is_a_handler_error():
    wrong = [
        Output(SCORES, "s-1", {"schema_version": 1, "session_id": "s-1"}),
        Output(SCORES, "s-1", session(user("hi"))),
        Output("turnwatch.other", "s-1", score_record()),
    ]
    for output in wrong:
        with pytest.raises(WrongRecord):
            check_output(output)
    check_output(Output(SCORES, "s-1", score_record()))

    async def handler(topic, record):
        return [wrong[0]]

    bus, processor = bus_and_processor(handler)
    value = encode(session(user("hi")), LIMIT)
    assert await processor.handle(SESSIONS, "s-1", value, 0, 0) == "handler_error"
    [(_, letter)] = bus.dead_letters
    assert (letter.reason, letter.source_topic) == ("handler_error", SESSIONS)
    assert bus.metrics.produced.labels(SCORES)._value.get() == 0  # nothing half-published
