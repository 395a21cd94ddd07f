"""Partition moves after the previous owner finished with a conversation: what the next owner
restores from `turnwatch.sessionizer.changelog` (real broker, routing collectors and sessionizer
members in this process), and the changelog's parts without a broker.

Each broker test hands every partition from one member to the next once the first has published
the conversation and committed every observation (and the trace's link): nothing is left to
replay, so only the changelog tells the next owner what the first one knew.
"""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path
from types import SimpleNamespace

import orjson
import pytest
from kafka import KafkaProducer
from prometheus_client import CollectorRegistry
from turnwatch.collector.changelog import MAX_JOINED_BY_TRACE, PartitionChangelog
from turnwatch.collector.metrics import CollectorMetrics
from turnwatch.collector.revision_clock import HandedOver, SessionRevisions
from turnwatch.collector.sealing import Sealer

from tests.kafka_broker import TansuBroker, read_topic, topic_size
from tests.otlp_requests import LOOPBACK, PROTOBUF, chat_span, metric_value, trace_request
from tests.test_distributed import PARTITIONS, SECRET, Distributed
from tests.test_routing import tool_span
from tests.waiting import eventually
from turnwatch.app.sessionizer_role import SessionizerRole
from turnwatch.bus.ledger import OffsetLedger, Position
from turnwatch.bus.records import CHANGELOG, OBSERVATIONS, SESSIONS, ChangelogRecord
from turnwatch.lru import LRU
from turnwatch.schema import Session

IDLE = 2.0
BEHIND_SECONDS = 120.0  # more than the idle timeout, less than the reopen window


@pytest.fixture
def bootstrap():
    """A broker of its own per test: each counts every session on its topic."""
    broker = TansuBroker()
    broker.start()
    yield broker.bootstrap
    broker.stop()


def send(url: str, *spans) -> None:
    body = trace_request(list(spans)).SerializeToString()
    response = LOOPBACK.post(f"{url}/v1/traces", content=body, headers={"Content-Type": PROTOBUF})
    assert response.status_code == 200, response.text


def sessions(bootstrap: str) -> list[Session]:
    records = read_topic(bootstrap, SESSIONS, topic_size(bootstrap, SESSIONS))
    return [Session.model_validate_json(record.value) for record in records]


def owning_every_partition(member: SessionizerRole) -> None:
    eventually(
        lambda: len(member.ledger.assigned),
        lambda owned: owned == PARTITIONS,
        timeout=60,
        what="the member to own every partition",
    )


def first_session_published(distributed: Distributed) -> None:
    """The only member published the conversation's first session and committed every
    observation (a session's only once its changelog record is on the broker too)."""
    eventually(
        lambda: topic_size(distributed.bootstrap, SESSIONS),
        lambda size: size == 1,
        timeout=30,
        what="the first session",
    )
    distributed.settled(members=distributed.members)


def hand_every_partition_over(distributed: Distributed) -> SessionizerRole:
    """The only member, done with the conversation, leaves; a new one takes over."""
    first_session_published(distributed)
    distributed.stop_member(0)
    joining = distributed.join()
    owning_every_partition(joining)
    return joining


def broken_changelog_records(bootstrap: str, conversation: str) -> None:
    """Two records on the conversation's changelog partition that no member can read."""
    key = Sealer(SECRET.encode()).route_key("conversation", conversation).encode()
    foreign = Sealer(b"another-deployment-secret-entirely").seal(b"{}", b"changelog link")
    producer = KafkaProducer(bootstrap_servers=[bootstrap])
    try:
        producer.send(CHANGELOG, key=key, value=b"{not json").get(10)
        record = ChangelogRecord(kind="link", sealed=foreign).model_dump_json().encode()
        producer.send(CHANGELOG, key=key, value=record).get(10)
    finally:
        producer.close()


def joins_a_later_keyless_span(bootstrap: str, tmp_path: Path, broken: bool) -> tuple:
    distributed = Distributed(
        bootstrap, tmp_path, members=1, **{"sessions.idle_timeout_seconds": IDLE}
    )
    try:
        keyed, other = distributed.collector_urls[:2]
        owning_every_partition(distributed.members[0])  # restored its (empty) changelog
        send(keyed, chat_span("conv-link"))  # names the conversation: a link for its trace
        if broken:  # after the first member's own restore
            first_session_published(distributed)
            broken_changelog_records(bootstrap, "conv-link")
        joining = hand_every_partition_over(distributed)
        ops = distributed.member_ops[-1]
        # Through a collector that never saw the trace's keyed span: routed by trace.
        send(other, tool_span("conv-link", "call_1"))
        eventually(
            lambda: metric_value(
                ops, "turnwatch_bus_records_consumed_total", topic=OBSERVATIONS, outcome="processed"
            ),
            lambda processed: processed >= 1,
            timeout=30,
            what="the new member to take the span",
        )
        distributed.settled(members=[joining])  # and to hand its session on
        restored = "turnwatch_changelog_restored_total"
        routed = "turnwatch_observations_routed_total"
        counts = {
            "trace_keyed": metric_value(ops, "turnwatch_sessions_trace_keyed_total"),
            "forwarded": metric_value(ops, routed, route="forwarded"),
            "restored": metric_value(ops, restored, outcome="restored"),
            "unreadable": metric_value(ops, restored, outcome="unreadable"),
        }
        published = sessions(bootstrap)
    finally:
        distributed.stop()
    return published, counts


def assert_joined(published: list[Session], counts: dict) -> None:
    # Not a session of its own keyed by the trace id: forwarded to its conversation's owner.
    assert counts["trace_keyed"] == 0 and counts["forwarded"] == 1
    assert counts["restored"] == 2  # the link and the conversation
    first, later = sorted(published, key=lambda session: session.revision)
    assert later.session_id == first.session_id and later.revision > first.revision
    assert later.key_source == "trace_mapping"


@pytest.mark.slow
def test_a_member_taking_over_after_the_link_was_committed_joins_a_later_keyless_span(
    bootstrap, tmp_path
):
    published, counts = joins_a_later_keyless_span(bootstrap, tmp_path, broken=False)
    assert_joined(published, counts)
    assert counts["unreadable"] == 0


@pytest.mark.slow
def test_an_unreadable_changelog_record_is_logged_and_costs_nothing_else(
    bootstrap, tmp_path, caplog
):
    with caplog.at_level(logging.WARNING, logger="turnwatch.collector"):
        published, counts = joins_a_later_keyless_span(bootstrap, tmp_path, broken=True)
    assert counts["unreadable"] == 2
    reasons = sorted(
        record.reason for record in caplog.records if record.msg.startswith("changelog record")
    )
    assert reasons == ["not_json", "unsealable"]
    assert_joined(published, counts)  # the readable records were restored all the same


@pytest.mark.slow
def test_a_continuation_through_a_collector_whose_clock_is_behind_gets_the_next_revision(
    bootstrap, tmp_path
):
    distributed = Distributed(
        bootstrap, tmp_path, members=1, **{"sessions.idle_timeout_seconds": IDLE}
    )
    try:
        ahead, behind = distributed.collector_urls[:2]
        owning_every_partition(distributed.members[0])
        send(ahead, chat_span("conv-clock", 0))
        hand_every_partition_over(distributed)
        router = distributed.services[1].service.pipeline.router
        router.arrivals.wall_clock = lambda: time.time() - BEHIND_SECONDS
        send(behind, chat_span("conv-clock", 1))
        eventually(
            lambda: topic_size(bootstrap, SESSIONS),
            lambda size: size == 2,
            timeout=30,
            what="the continuation's session",
        )
        published = sessions(bootstrap)
    finally:
        distributed.stop()
    first, continued = published  # in the order they were published
    assert continued.session_id == first.session_id
    assert continued.revision == first.revision + 1
    # Its first turn went out with the first revision, which the new owner never held.
    assert not first.truncated and continued.truncated


# Without a broker.


def test_a_replayed_copy_keeps_its_revision_and_new_observations_number_above_it():
    revisions = SessionRevisions(10)
    handed = HandedOver(revision=5_000, last_arrival=5_000, offsets={1: 40})
    copy = [Position(OBSERVATIONS, 1, 30), Position(OBSERVATIONS, 1, 40)]
    revisions.hand_over("svc\x00conv", handed)
    assert revisions.number("svc\x00conv", 5_000, copy) == 5_000  # downstream counts it once
    revisions = SessionRevisions(10)
    revisions.hand_over("svc\x00conv", handed)
    assert revisions.number("svc\x00conv", 4_000, [Position(OBSERVATIONS, 1, 41)]) == 5_001
    # A copy of an earlier revision keeps its own number, and the handed one waits for its own.
    revisions = SessionRevisions(10)
    revisions.hand_over("svc\x00conv", handed)
    assert revisions.number("svc\x00conv", 3_000, [Position(OBSERVATIONS, 1, 20)]) == 3_000
    assert revisions.number("svc\x00conv", 5_000, copy) == 5_000


def test_only_a_continuation_of_a_handed_over_revision_lacks_its_earlier_content():
    handed = HandedOver(revision=5_000, last_arrival=5_000, offsets={1: 40, 2: 7})
    revisions = SessionRevisions(10)
    revisions.hand_over("svc\x00conv", handed)
    copy = [Position(OBSERVATIONS, 1, 30), Position(OBSERVATIONS, 2, 7)]
    assert not revisions.continues_handed_over("svc\x00conv", copy)
    assert not revisions.continues_handed_over("svc\x00other", [Position(OBSERVATIONS, 1, 99)])
    continuation = [Position(OBSERVATIONS, 2, 8)]
    assert revisions.continues_handed_over("svc\x00conv", continuation)
    assert revisions.number("svc\x00conv", 4_000, continuation) == 5_001
    # Used up: the member numbered above it, and what it closes next it holds itself.
    assert not revisions.continues_handed_over("svc\x00conv", [Position(OBSERVATIONS, 2, 9)])


def test_a_changelog_that_cannot_be_read_leaves_the_member_as_without_one(caplog):
    async def unreachable(topic: str, partitions: set[int], limit: int) -> list:
        raise TimeoutError("no broker")

    async def unused(topic, key, record) -> None:
        raise AssertionError("nothing is written on restore")

    metrics = CollectorMetrics(CollectorRegistry())
    revisions, links = SessionRevisions(10), LRU[str, str](10)
    changelog = PartitionChangelog(
        Sealer(SECRET.encode()),
        Sealer(SECRET.encode()).route_key,
        OffsetLedger(),
        unused,
        revisions,
        links,
        metrics,
        unreachable,
        limit=20,
        queue_size=10,
    )
    with caplog.at_level(logging.ERROR, logger="turnwatch.collector"):
        asyncio.run(changelog.restore({(OBSERVATIONS, 0), (OBSERVATIONS, 3)}))
    assert metrics.changelog_restored.labels("read_failed")._value.get() == 2
    [logged] = [r for r in caplog.records if r.msg.startswith("changelog unreadable")]
    assert logged.error == "TimeoutError" and logged.partitions == 2
    assert len(links) == 0 and len(revisions) == 0


def test_a_conversation_record_naming_too_many_forwarded_spans_is_unreadable():
    async def unused(topic, key, record) -> None:
        raise AssertionError("nothing is written on restore")

    sealer = Sealer(SECRET.encode())
    state = {"key": "svc\x00conv", "revision": 5, "last_arrival": 5, "offsets": {"1": 40}}
    values = []
    for joined in (MAX_JOINED_BY_TRACE, MAX_JOINED_BY_TRACE + 1):
        payload = orjson.dumps({**state, "joined_by_trace": list(range(joined))})
        sealed = sealer.seal(payload, b"changelog conversation")
        values.append(ChangelogRecord(kind="conversation", sealed=sealed).model_dump_json())

    async def read_tail(topic: str, partitions: set[int], limit: int) -> list:
        return [
            SimpleNamespace(value=v.encode(), partition=1, offset=n) for n, v in enumerate(values)
        ]

    metrics = CollectorMetrics(CollectorRegistry())
    revisions = SessionRevisions(10)
    changelog = PartitionChangelog(
        sealer, sealer.route_key, OffsetLedger(), unused, revisions, LRU[str, str](10),
        metrics, read_tail, limit=20, queue_size=10,
    )  # fmt: skip
    asyncio.run(changelog.restore({(OBSERVATIONS, 1)}))
    assert metrics.changelog_restored.labels("unreadable")._value.get() == 1
    assert metrics.changelog_restored.labels("restored")._value.get() == 1
    handed = revisions.handed_over("svc\x00conv")
    assert handed is not None and len(handed.joined_by_trace) == MAX_JOINED_BY_TRACE


def test_only_partitions_new_to_a_member_are_restored():
    ledger = OffsetLedger()
    ledger.assign([(OBSERVATIONS, 0), (OBSERVATIONS, 1)])
    assert ledger.take_gained() == {(OBSERVATIONS, 0), (OBSERVATIONS, 1)}
    ledger.revoke([(OBSERVATIONS, 0), (OBSERVATIONS, 1)])  # an eager rebalance
    ledger.assign([(OBSERVATIONS, 1), (OBSERVATIONS, 2)])  # 1 straight back: its state stays
    assert ledger.take_gained() == {(OBSERVATIONS, 2)}
    assert ledger.take_gained() == set()
    ledger.assign([(OBSERVATIONS, 3)])
    ledger.lose([(OBSERVATIONS, 3)])  # gone before its restore: nothing to restore
    assert ledger.take_gained() == set()
