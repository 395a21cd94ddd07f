"""Exporter replicas at a handover: each score record counted once across members, one canary
verdict for all of them.

A record reaches two members when the first counted it but did not commit its offset: it was
killed (SIGKILL, a process of its own), or stopped (SIGTERM) with the record in hand past its
shutdown timeout, so its partitions were revoked with that record uncommitted. The next owner
reads the record again; the PostgreSQL session store's count claims tell it the record was
counted, so the counters summed
over the members (the killed one as Prometheus last scraped it) equal the records published,
exactly, and the next owner reports the redeliveries as duplicates. While the store cannot be
written a record is held, uncommitted, and the failures are counted; nothing is lost when it
comes back. The online canary gate reads its windows from the same store, so two members export
the verdict one process computes from all the sessions.
"""

from __future__ import annotations

import random
import signal
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from kafka import KafkaConsumer, TopicPartition
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families
from turnwatch.exporters.gate.canary import CanaryConfig, CanaryGate

from tests.exporter_hold import HOLD_MARKER, HOLD_PREFIX, HOLD_RELEASE
from tests.postgres_server import PostgresServer
from tests.serve_process import ServeProcess
from tests.test_distributed import FAST_GROUP
from tests.test_exporter import score_record
from tests.test_exporter_replicas import (  # noqa: F401 (broker: a fixture)
    METRIC,
    SERVICES,
    Member,
    Publisher,
    broker,
    postgres_store,
    total,
    warm_up,
)
from tests.waiting import eventually
from turnwatch.bus.records import SCORES

HOLD = {"bus.exporter_handler": "tests.exporter_hold:hold"}
CANARY = {"exporter.canary": {"enabled": True, "evaluate_every_seconds": 1}}


@pytest.fixture
def postgres(tmp_path):
    server = PostgresServer()
    server.start()
    yield server, postgres_store(server, tmp_path)
    server.stop()


@pytest.fixture
def held(tmp_path, monkeypatch) -> tuple[Path, Path]:
    """The hold plug-in's marker (it holds a record) and release (let it go) files."""
    marker, release = tmp_path / "holding", tmp_path / "release"
    monkeypatch.setenv(HOLD_MARKER, str(marker))
    monkeypatch.setenv(HOLD_RELEASE, str(release))
    return marker, release


def publish_burst(publisher: Publisher, rounds: int, seed: int) -> None:
    """Scores of every service, then a `hold-` record per round on every partition's way."""
    rng = random.Random(seed)
    for number in range(rounds):
        for service in SERVICES:
            publisher.score(service, rng.uniform(0.2, 0.95))
        service = SERVICES[number % len(SERVICES)]
        session_id = f"{HOLD_PREFIX}{seed}-{number}"
        value = rng.uniform(0.2, 0.95)
        record = score_record(session_id, 1, service, scores={METRIC: value})
        publisher._send(SCORES, session_id, record)
        publisher.scores[service].append(value)
    publisher.flush()


def published(publisher: Publisher) -> int:
    return sum(len(values) for values in publisher.scores.values())


def settled(members: list[Member], count: int) -> None:
    """Every record taken (exported or a duplicate) and nothing left to read."""
    eventually(
        lambda: (
            total(members, "turnwatch_exporter_records_total", outcome="exported"),
            total(members, "turnwatch_bus_consumer_lag_records", topic=SCORES),
        ),
        lambda state: state[0] >= count and state[1] == 0,
        timeout=120,
        interval=0.3,
        what=f"{count} score records exported and no lag",
    )


def assert_sums(members_exported: float, scored: dict[str, float], publisher: Publisher) -> None:
    assert members_exported == published(publisher)
    for service in SERVICES:
        assert scored[service] == len(publisher.scores[service])


def exporter_process(bootstrap: str, workdir: Path, store: dict[str, object]) -> ServeProcess:
    """`turnwatch serve --role exporter` with the hold plug-in, as a process of its own."""
    settings = {
        "bus.kafka.bootstrap": bootstrap,
        **{f"bus.{key}": value for key, value in FAST_GROUP.items()},
        "exporter.services": list(SERVICES),
        **store,
        **HOLD,
    }
    return ServeProcess(workdir, settings, role="exporter")


def share_partitions(publisher: Publisher, leaving: ServeProcess, staying: Member) -> None:
    """Scores published until the process and the member both count some: both own partitions."""
    eventually(
        lambda: (publisher.score(SERVICES[0], 0.8), publisher.flush(), exported_by(leaving))[2],
        lambda exported: exported > 0 and staying.exported() > 0,
        timeout=90,
        interval=0.3,
        what="both members to own partitions",
    )


def hand_over(tmp_path: Path, bootstrap: str, store: dict, marker: Path, leave: str) -> None:
    """An exporter process and a member here share the partitions; the process holds a record
    it counted and leaves (`kill`: SIGKILL; `stop`: SIGTERM, whose drain times out with the
    record in hand, so it exits without committing it); the member takes its partitions over
    from the last commit and every score record is counted once over both."""
    publisher = Publisher(bootstrap)
    leaving = exporter_process(bootstrap, tmp_path / "leaving", store)
    members: list[Member] = []
    try:
        members.append(Member(bootstrap, tmp_path, tmp_path / "cases", "staying", **store))
        staying = members[0]
        share_partitions(publisher, leaving, staying)
        publish_burst(publisher, 40, seed=1)
        eventually(marker.exists, timeout=60, interval=0.1, what="the process to hold a record")
        # What Prometheus last scraped from it: every record it counted, the held one too.
        counted = leaving.counters()
        if leave == "kill":
            assert leaving.kill() == -signal.SIGKILL
        else:
            leaving.stop()
        publish_burst(publisher, 10, seed=2)  # the staying member owns every partition now
        left_exported = counted[("turnwatch_exporter_records_total", OUTCOME_EXPORTED)]
        settled(members, published(publisher) - left_exported)

        scored = {
            service: counted[("turnwatch_sessions_scored_total", frozenset({("service", service)}))]
            + staying.value("turnwatch_sessions_scored_total", service=service)
            for service in SERVICES
        }
        assert_sums(left_exported + staying.exported(), scored, publisher)
        # The held record and its uncommitted batch came again, and were found counted.
        assert staying.value("turnwatch_exporter_records_total", outcome="duplicate") >= 1
    finally:
        close_all(publisher, members, leaving)


def close_all(publisher: Publisher, members: list[Member], leaving: ServeProcess) -> None:
    publisher.close()
    for member in members:
        member.stop()
    if leaving.process.poll() is None:
        leaving.kill()


OUTCOME_EXPORTED = frozenset({("outcome", "exported")})


def exported_by(process: ServeProcess) -> float:
    return process.metric("turnwatch_exporter_records_total", outcome="exported")


LEAVES = pytest.mark.parametrize(
    "leave",
    [
        pytest.param("kill", id="killed after taking the record and before committing"),
        pytest.param("stop", id="partitions revoked with the record in hand"),
    ],
)
"""How the process that holds a record leaves: SIGKILL, or SIGTERM with a drain that times out."""


@pytest.mark.slow  # a broker, PostgreSQL, an exporter process and an exporter member
@LEAVES
def test_a_record_counted_by_a_member_that_leaves_uncommitted_is_counted_once(
    tmp_path,
    broker,  # noqa: F811 (the fixture)
    postgres,
    held,
    leave,
):
    hand_over(tmp_path, broker, postgres[1], held[0], leave)


def committed(bootstrap: str, group: str) -> int:
    """The offsets `group` committed on the scores topic, summed over its partitions."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
    try:
        partitions = consumer.partitions_for_topic(SCORES) or ()
        return sum(consumer.committed(TopicPartition(SCORES, p)) or 0 for p in partitions)
    finally:
        consumer.close()


@pytest.mark.slow  # a broker, PostgreSQL stopped and started again, an exporter member
def test_while_the_store_is_unreachable_records_wait_uncommitted_and_are_counted_once(
    tmp_path,
    broker,  # noqa: F811 (the fixture)
    postgres,
):
    server, store = postgres
    publisher = Publisher(broker)
    member = Member(broker, tmp_path, tmp_path / "cases", "only", **store)
    try:
        warm_up(publisher, [member])
        settled([member], published(publisher))
        eventually(
            lambda: committed(broker, member.group),
            lambda offsets: offsets == published(publisher),
            what="the warm-up committed",
        )
        server.pause()
        before = published(publisher)
        publish_burst(publisher, 5, seed=5)
        eventually(
            lambda: member.value("turnwatch_exporter_claim_failures_total"),
            lambda failures: failures >= 2,
            timeout=60,
            interval=0.2,
            what="claims failing while the store is down",
        )
        # The first record of the burst is held: it and everything after it stay uncommitted.
        assert member.exported() == before
        assert committed(broker, member.group) == before
        server.resume()
        settled([member], published(publisher))
        assert member.exported() == published(publisher)
        assert member.value("turnwatch_exporter_records_total", outcome="duplicate") == 0
        eventually(
            lambda: committed(broker, member.group),
            lambda offsets: offsets == published(publisher),
            what="the burst committed once the store is back",
        )
    finally:
        publisher.close()
        member.stop()


CANARY_SESSIONS = 150


def versioned(number: int, version: str, joint: bool, at: datetime):
    record = score_record(f"canary-{version}-{number}", 1, SERVICES[0], joint=joint)
    return record.model_copy(update={"service_version": version, "scored_at": at})


@pytest.mark.slow  # a broker, PostgreSQL and two exporter members
def test_two_members_export_the_canary_verdict_one_process_computes(
    tmp_path,
    broker,  # noqa: F811 (the fixture)
    postgres,
):
    _server, store = postgres
    publisher = Publisher(broker)
    members: list[Member] = []
    start = datetime.now(UTC) - timedelta(hours=1)
    records = [
        versioned(number, "1.3", True, start + timedelta(seconds=number))
        for number in range(CANARY_SESSIONS)
    ] + [
        versioned(number, "1.4", number % 5 != 0, start + timedelta(seconds=1000 + number))
        for number in range(CANARY_SESSIONS)
    ]
    one_process = CollectorRegistry()
    reference = CanaryGate(one_process, CanaryConfig.model_validate({"enabled": True}))
    for record in records:
        reference.observe(SERVICES[0], record)
    reference.evaluate()
    try:
        for name in ("a", "b"):
            members.append(Member(broker, tmp_path, tmp_path / "cases", name, **store, **CANARY))
        warm_up(publisher, members)
        for record in records:
            publisher._send(SCORES, record.session_id, record)
        publisher.flush()
        for member in members:
            assert member.value("turnwatch_exporter_records_total", outcome="exported") > 0

        def gate_of(text: str) -> dict[tuple[str, tuple], float]:
            return {
                (name, tuple(sorted(labels.items()))): value
                for name, labels, value in gate_samples(text)
            }

        expected = gate_of(exposition(one_process))
        assert expected[("turnwatch_release_gate_verdict", _overall())] == 1  # a regression
        for member in members:
            eventually(
                lambda member=member: gate_of(member.scrape()),
                lambda found: found == expected,
                timeout=90,
                interval=0.5,
                what=f"member {member.name} to export one process's verdict",
            )
    finally:
        publisher.close()
        for member in members:
            member.stop()


def _overall() -> tuple:
    return (("rule", "overall"), ("service", SERVICES[0]))


GATE_FAMILIES = (
    "turnwatch_release_gate_verdict",
    "turnwatch_release_gate_difference",
    "turnwatch_release_gate_sessions",
)


def exposition(registry: CollectorRegistry) -> str:
    return generate_latest(registry).decode()


def gate_samples(text: str):
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name in GATE_FAMILIES:
                yield sample.name, sample.labels, sample.value
