"""Evaluation events at an exporter handover, on a real broker with a PostgreSQL session store.

An exporter process holds a score record after sending its events and is killed (SIGKILL) or
stopped (SIGTERM, its drain timing out with the record in hand), so the held record and its
uncommitted batch reach the member that takes its partitions over. Each member sends to a
loopback OTLP logs receiver of its own: the events the process sent (and the store marked)
are not sent again by the next owner, and over both receivers every result of every published
record arrives once, by its `log.record.uid`.

And an exporter process whose backend stalls (answers 503, the OTLP "try again later") is
killed with the events of the records it took still queued, while it kept consuming: those
records' offsets were not committed, so the next owner takes them again and sends their
events; every result of every record is accepted exactly once over the two backends.
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from turnwatch.exporters.sessions.database import PostgresDatabase

from tests.exporter_hold import HOLD_PREFIX
from tests.serve_process import ServeProcess
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
    SERVICES,
    Member,
    Publisher,
    broker,
)
from tests.waiting import eventually
from turnwatch.bus.records import INCIDENTS, SCORES

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


@dataclass
class Handover:
    """An exporter process sending to the first receiver and a member here sending to the next,
    over one PostgreSQL session store, both owning partitions."""

    publisher: Publisher
    leaving: ServeProcess
    staying: Member
    marks: PostgresDatabase


@contextlib.contextmanager
def handover(tmp_path, bootstrap: str, database, backends) -> Iterator[Handover]:
    server, store = database
    first_receiver, next_receiver = backends
    marks = PostgresDatabase(server.dsn)
    publisher = Publisher(bootstrap)
    leaving = exporter_process(
        bootstrap, tmp_path / "leaving", {**store, **events_to(first_receiver)}
    )
    members: list[Member] = []
    try:
        to_next = events_to(next_receiver)
        members.append(
            Member(bootstrap, tmp_path, tmp_path / "cases", "staying", **store, **to_next)
        )
        share_partitions(publisher, leaving, members[0])
        yield Handover(publisher, leaving, members[0], marks)
    finally:
        close_all(publisher, members, leaving)
        marks.close()


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
    first_receiver, next_receiver = receivers
    with handover(tmp_path, broker, postgres, receivers) as pair:
        publisher, leaving, staying, marks = pair.publisher, pair.leaving, pair.staying, pair.marks
        members = [staying]
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


def outcome_of(counters: dict, outcome: str) -> float:
    return counters[("turnwatch_evaluation_events_total", frozenset({("outcome", outcome)}))]


def records_taken(counters: dict) -> float:
    return sum(
        counters[("turnwatch_exporter_records_total", frozenset({("outcome", outcome)}))]
        for outcome in ("exported", "duplicate")
    )


def commits_of(counters: dict) -> float:
    return counters[("turnwatch_bus_commits_total", frozenset({("outcome", "committed")}))]


def incidents_taken(counters: dict) -> float:
    labels = frozenset({("topic", INCIDENTS), ("outcome", "processed")})
    return counters[("turnwatch_bus_records_consumed_total", labels)]


def uids(receiver: LogsReceiver) -> list[str]:
    return [event[UID] for event in list(receiver.accepted)]


@pytest.mark.slow  # a broker, PostgreSQL, an exporter process and an exporter member
def test_events_still_queued_when_a_member_is_killed_are_sent_by_the_next_owner(
    tmp_path,
    broker,  # noqa: F811 (the fixture)
    postgres,  # noqa: F811 (the fixture)
    receivers,  # noqa: F811 (the fixture)
):
    """The first receiver is the leaving process's backend; it stalls (answers 503)."""
    first_receiver, next_receiver = receivers
    with handover(tmp_path, broker, postgres, receivers) as pair:
        leaving, staying, publisher = pair.leaving, pair.staying, pair.publisher

        def leaving_settled() -> bool:
            queued = leaving.metric("turnwatch_evaluation_events_queued")
            marked = set(pair.marks.execute("SELECT session_id, revision, part FROM sent_events"))
            return queued == 0 and {part_of(e) for e in list(first_receiver.accepted)} <= marked

        # Nothing half sent before the stall: a part accepted in part would come twice.
        eventually(leaving_settled, timeout=60, interval=0.2, what="the process's events sent")
        before = leaving.counters()
        first_receiver.status = 503  # the backend stalls: every request is to be sent again
        for _ in range(20):
            for service in SERVICES:
                publisher.score(service, 0.6)
        publisher.flush()

        def stalled_share() -> dict:
            counters = leaving.counters()
            lag = counters[("turnwatch_bus_consumer_lag_records", frozenset({("topic", SCORES)}))]
            retried = counters[
                ("turnwatch_evaluation_request_retries_total", frozenset({("reason", "status")}))
            ]
            taken = records_taken(counters) - records_taken(before)
            return {"lag": lag, "retried": retried, "taken": taken, "counters": counters}

        at_kill = eventually(
            stalled_share,
            lambda state: state["lag"] == 0 and state["retried"] > 0 and state["taken"] > 0,
            timeout=60,
            interval=0.3,
            what="the process to take its share and its backend to stall",
        )
        # Incidents the process takes and commits: that commit covers its score partitions too,
        # so without the records held their offsets would be committed past the queued events.
        commits = commits_of(at_kill["counters"])
        for number in range(8):
            publisher.incident(number)
        publisher.flush()
        counters = eventually(
            leaving.counters,
            lambda now: incidents_taken(now) > 0 and commits_of(now) > commits,
            timeout=60,
            interval=0.3,
            what="the process to take incidents and commit",
        )
        held_records = records_taken(counters) - records_taken(before)
        # Every record the process took since the stall is queued, none accepted, none dropped.
        queued = counters[("turnwatch_evaluation_events_queued", frozenset())]
        assert queued == held_records * EVENTS_PER_RECORD
        assert outcome_of(counters, "exported") == len(first_receiver.accepted)
        assert outcome_of(counters, "refused") == 0
        assert leaving.kill() == -signal.SIGKILL

        expected = published(publisher) * EVENTS_PER_RECORD
        eventually(
            lambda: len(set(uids(first_receiver)) | set(uids(next_receiver))),
            lambda received: received >= expected,
            timeout=90,
            interval=0.3,
            what="every record's events accepted",
        )
        # The next owner done: nothing left to read or to send, so nothing more can come.
        eventually(
            lambda: (
                staying.value("turnwatch_bus_consumer_lag_records", topic=SCORES),
                staying.value("turnwatch_evaluation_events_queued"),
            ),
            lambda state: state == (0, 0),
            timeout=60,
            interval=0.3,
            what="the next owner to have sent everything",
        )

        accepted = uids(first_receiver) + uids(next_receiver)
        assert len(accepted) == len(set(accepted)) == expected  # each result once, none lost
        sessions = {e["turnwatch.session.id"] for e in first_receiver.accepted}
        sessions |= {e["turnwatch.session.id"] for e in next_receiver.accepted}
        assert len(sessions) == published(publisher)
        assert staying.value("turnwatch_evaluation_events_total", outcome="exported") == len(
            next_receiver.accepted
        )
        assert staying.value("turnwatch_evaluation_events_total", outcome="refused") == 0
        # The counts stay exact: the records replayed past the held ones are claimed already.
        left_exported = counters[("turnwatch_exporter_records_total", OUTCOME_EXPORTED)]
        assert left_exported + staying.exported() == published(publisher)
        assert staying.value("turnwatch_exporter_records_total", outcome="duplicate") >= 1
