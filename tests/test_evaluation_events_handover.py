"""Evaluation events at an exporter handover, on a real broker with a PostgreSQL session store:
an exporter process holds a score record after sending its events and is killed (SIGKILL) or
stopped (SIGTERM, its drain timing out with the record in hand), so the held record and its
uncommitted batch reach the member that takes its partitions over. Each member sends to a
loopback OTLP logs receiver of its own: the events the process sent (and the store marked)
are not sent again by the next owner, and over both receivers every result of every published
record arrives once, by its `log.record.uid`.
"""

from __future__ import annotations

import signal

import pytest
from turnwatch.exporters.sessions.database import PostgresDatabase

from tests.exporter_hold import HOLD_PREFIX
from tests.test_evaluation_events import LogsReceiver
from tests.test_evaluation_handover import receivers  # noqa: F401 (a fixture)
from tests.test_exporter import score_record
from tests.test_exporter_handover import (  # noqa: F401 (held, postgres: fixtures)
    LEAVES,
    OUTCOME_EXPORTED,
    close_all,
    exporter_process,
    held,
    postgres,
    publish_burst,
    published,
    settled,
    share_partitions,
)
from tests.test_exporter_replicas import (  # noqa: F401 (broker: a fixture)
    METRIC,
    Member,
    Publisher,
    broker,
)
from tests.waiting import eventually

SAMPLE = score_record("sample", 1, scores={METRIC: 0.5})
EVENTS_PER_RECORD = len(list(SAMPLE.results())) + len(SAMPLE.metrics)
UID = "log.record.uid"


def events_to(receiver: LogsReceiver) -> dict[str, object]:
    return {"exporter.evaluation_events": {"endpoint": receiver.url}}


def part_of(event: dict) -> tuple[str, int, str]:
    part = "checks" if event["turnwatch.evaluator"] == "turnwatch.check" else "judged"
    return event["turnwatch.session.id"], int(event["turnwatch.session.revision"]), part


def all_sent_and_marked(leaving, receiver: LogsReceiver, marks: PostgresDatabase) -> bool:
    """Every record the process took has its events sent, and every part sent is marked."""
    counters = leaving.counters()
    taken = sum(
        counters[("turnwatch_exporter_records_total", frozenset({("outcome", outcome)}))]
        for outcome in ("exported", "duplicate")
    )
    handled = sum(
        counters[("turnwatch_evaluation_events_total", frozenset({("outcome", outcome)}))]
        for outcome in ("exported", "already_sent")
    )
    marked = set(marks.execute("SELECT session_id, revision, part FROM sent_events"))
    received = {part_of(event) for event in list(receiver.events)}
    return handled == taken * EVENTS_PER_RECORD and received <= marked


@pytest.mark.slow  # a broker, PostgreSQL, an exporter process and an exporter member
@LEAVES
def test_events_a_leaving_member_sent_are_not_sent_again_by_the_next_owner(
    tmp_path,
    broker,  # noqa: F811 (the fixture)
    postgres,  # noqa: F811 (the fixture)
    held,  # noqa: F811 (the fixture)
    receivers,  # noqa: F811 (the fixture)
    leave,
):
    server, store = postgres
    first_receiver, next_receiver = receivers
    marks = PostgresDatabase(server.dsn)
    publisher = Publisher(broker)
    leaving = exporter_process(broker, tmp_path / "leaving", {**store, **events_to(first_receiver)})
    members: list[Member] = []
    try:
        to_next = events_to(next_receiver)
        members.append(Member(broker, tmp_path, tmp_path / "cases", "staying", **store, **to_next))
        staying = members[0]
        share_partitions(publisher, leaving, staying)
        publish_burst(publisher, 40, seed=1)
        eventually(held[0].exists, timeout=60, interval=0.1, what="the process to hold a record")
        eventually(
            lambda: all_sent_and_marked(leaving, first_receiver, marks),
            timeout=60,
            interval=0.2,
            what="the process's events sent and marked",
        )
        counted = leaving.counters()
        if leave == "kill":
            assert leaving.kill() == -signal.SIGKILL
        else:
            leaving.stop()
        publish_burst(publisher, 10, seed=2)
        left_exported = counted[("turnwatch_exporter_records_total", OUTCOME_EXPORTED)]
        settled(members, published(publisher) - left_exported)
        eventually(
            lambda: len(first_receiver.events) + len(next_receiver.events),
            lambda received: received >= published(publisher) * EVENTS_PER_RECORD,
            timeout=60,
            interval=0.2,
            what="every record's events received",
        )

        first_ids = [event[UID] for event in first_receiver.events]
        next_ids = [event[UID] for event in next_receiver.events]
        assert not set(first_ids) & set(next_ids)  # nothing the process sent was sent again
        assert len(first_ids) + len(next_ids) == published(publisher) * EVENTS_PER_RECORD
        assert len(set(first_ids + next_ids)) == published(publisher) * EVENTS_PER_RECORD
        held_session = held[0].read_text(encoding="utf-8")
        assert held_session.startswith(HOLD_PREFIX)
        sessions_sent_first = {event["turnwatch.session.id"] for event in first_receiver.events}
        assert held_session in sessions_sent_first
        # The held record came to the next owner again and was found sent.
        already = staying.value("turnwatch_evaluation_events_total", outcome="already_sent")
        assert already >= EVENTS_PER_RECORD
    finally:
        close_all(publisher, members, leaving)
        marks.close()
