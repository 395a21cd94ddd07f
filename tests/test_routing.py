"""The distributed layout's parts without a broker: sealing, routing by conversation or trace,
links, the sessionizer's intake and the offsets ledger. The whole layout on a real broker is
tests/test_distributed.py."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import subprocess
import sys
import time
from types import SimpleNamespace

import orjson
import pytest
from kafka.structs import OffsetAndMetadata, TopicPartition
from opentelemetry.proto.trace.v1.trace_pb2 import Span
from prometheus_client import CollectorRegistry
from turnwatch.collector.changelog import PartitionChangelog
from turnwatch.collector.config import CollectorConfig
from turnwatch.collector.deid.secret import SecretError
from turnwatch.collector.intake import ObservationIntake
from turnwatch.collector.metrics import CollectorMetrics
from turnwatch.collector.observations import (
    BadObservations,
    ObservationCodec,
    RoutedObservation,
    WireContext,
    WireMessage,
    WireObservation,
    WireToolCall,
    WireToolExecution,
)
from turnwatch.collector.otlp_common import DecodeLimits
from turnwatch.collector.otlp_proto import trace_request_to_views
from turnwatch.collector.pipeline import CollectorPipeline
from turnwatch.collector.records import (
    Context,
    Message,
    Observation,
    ObservationKind,
    ToolCallPart,
    ToolExecution,
)
from turnwatch.collector.revision_clock import RevisionClock, arrival_identity
from turnwatch.collector.router import RECORD_CONTENT_BYTES, ObservationRouter
from turnwatch.collector.sealing import Sealer, Unsealable

from tests.conftest import make_settings
from tests.otlp_requests import chat_span, key_values, trace_id_for, trace_request
from tests.stages import AssembledAtOnce
from turnwatch.app.cli import main
from turnwatch.app.context import ServiceContext
from turnwatch.app.roles import build_roles
from turnwatch.app.settings import ConfigError
from turnwatch.bus.config import BusConfig
from turnwatch.bus.embedded import EmbeddedBus
from turnwatch.bus.kafka import KafkaBus
from turnwatch.bus.kafka_consumer import ConsumerWorker
from turnwatch.bus.ledger import OffsetLedger, Position
from turnwatch.bus.metrics import BusMetrics
from turnwatch.bus.records import OBSERVATIONS, SESSIONS, ObservationRecord
from turnwatch.lru import LRU
from turnwatch.revisions import SeenRevisions
from turnwatch.schema import CloseReason, Session

SECRET = b"unit-test-deployment-secret-0123"
CODEC = ObservationCodec(Sealer(SECRET))


def tool_span(conversation: str, call_id: str) -> Span:
    """An execute_tool span: it names no conversation, only its trace ties it to one."""
    attributes = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "lookup_order",
        "gen_ai.tool.call.id": call_id,
        "gen_ai.tool.call.arguments": '{"order_id": "4411"}',
        "gen_ai.tool.call.result": '{"status": "packed"}',
    }
    return Span(
        trace_id=trace_id_for(conversation),
        span_id=b"\x07" * 8,
        name="execute_tool lookup_order",
        start_time_unix_nano=1_000,
        end_time_unix_nano=2_000,
        attributes=key_values(attributes),
    )


def spans(*items: Span):
    return trace_request_to_views(trace_request(list(items)), DecodeLimits()).items


class Routing:
    """A collector pipeline in route mode; the queued records are read instead of published."""

    def __init__(self, queue_size: int = 100, wall_clock=time.time) -> None:
        config = CollectorConfig.model_validate({"routing": {"queue_size": queue_size}})
        self.metrics = CollectorMetrics(CollectorRegistry())
        self.router = ObservationRouter(
            config.routing, CODEC, self.metrics, self._unused, wall_clock
        )
        stage = AssembledAtOnce(config, self.metrics)
        self.pipeline = CollectorPipeline(config, self.metrics, stage, router=self.router)

    async def _unused(self, topic, key, record) -> None:
        raise AssertionError("these tests read the queue")

    def queued(self) -> list[tuple[str, ObservationRecord]]:
        records = []
        while not self.router.queue.empty():
            key, record, _ = self.router.queue.get_nowait()
            records.append((key, record))
        return records


def test_a_keyless_span_is_routed_by_trace_until_its_trace_is_mapped_then_with_the_conversation():
    routing = Routing()
    routing.pipeline.accept_spans(spans(tool_span("conv-a", "c1"), chat_span("conv-a")))
    first = routing.queued()
    assert [record.route for _, record in first] == ["trace", "conversation", "link"]
    trace_key = CODEC.route_key("trace", trace_id_for("conv-a").hex())
    conversation_key = CODEC.route_key("conversation", "conv-a")
    assert [key for key, _ in first] == [trace_key, conversation_key, trace_key]
    [link] = CODEC.open_links(first[2][1])
    assert (link.trace_id, link.conversation_key) == (trace_id_for("conv-a").hex(), "conv-a")

    routing.pipeline.accept_spans(spans(tool_span("conv-a", "c2")))
    [(key, record)] = routing.queued()  # no second link: this collector knows the trace
    assert (key, record.route) == (conversation_key, "conversation")
    [item] = CODEC.open_observations(record)
    assert item.context.conversation_key == "conv-a"
    assert item.context.key_source == "trace_mapping"
    assert item.observation is not None and item.observation.tool is not None
    assert routing.pipeline.sessionizer.open_count == 0  # route mode builds no sessions


def test_a_full_routing_queue_answers_overloaded_then_drops_and_counts():
    routing = Routing(queue_size=4)  # 503 from 3 queued records on
    routing.pipeline.accept_spans(spans(chat_span("conv-a")))  # its record and its link
    assert not routing.pipeline.overloaded()
    routing.pipeline.accept_spans(spans(chat_span("conv-b"), chat_span("conv-c")))
    assert routing.pipeline.overloaded()
    # Both records fit; both links found the queue full.
    assert routing.metrics.observations_dropped.labels("queue_full")._value.get() == 2
    routes = [record.route for _, record in routing.queued()]
    assert routes == ["conversation", "link", "conversation", "conversation"]


def test_sealed_records_open_only_with_the_key_and_the_route_they_were_sealed_for():
    sealer = Sealer(SECRET)
    token = sealer.seal(b"Baker Street", b"conversation")
    assert sealer.open(token, b"conversation") == b"Baker Street"
    assert b"Baker" not in token.encode()
    for other, route in (
        (Sealer(b"another-secret-0123456789"), b"conversation"),
        (sealer, b"trace"),
    ):
        with pytest.raises(Unsealable):
            other.open(token, route)
    with pytest.raises(Unsealable):
        sealer.open("not base64 at all!", b"conversation")
    assert sealer.route_key("conversation", "k") == Sealer(SECRET).route_key("conversation", "k")
    assert sealer.route_key("conversation", "k") != Sealer(b"x" * 32).route_key("conversation", "k")


def test_the_ledger_commits_below_the_oldest_held_record_and_forgets_revoked_partitions():
    ledger = OffsetLedger()
    revoked: list[set] = []
    ledger.on_revoked = revoked.append
    ledger.assign([("t", 0), ("t", 1)])
    first, later = Position("t", 0, 5), Position("t", 0, 9)
    ledger.hold(first)
    ledger.hold(first)  # two sessions hold one record
    ledger.hold(later)
    assert ledger.committable("t", 0, 12) == 5
    ledger.release([first])
    assert ledger.committable("t", 0, 12) == 5
    ledger.release([first])
    assert ledger.committable("t", 0, 12) == 9
    assert ledger.committable("t", 1, 3) == 3
    ledger.hold(Position("t", 1, 2))
    # An eager rebalance revokes both; partition 1 comes straight back with its holds.
    ledger.revoke([("t", 0), ("t", 1)])
    assert not ledger.owns("t", 1) and revoked == []
    ledger.assign([("t", 1)])
    assert revoked == [{("t", 0)}] and ledger.held() == 1
    assert ledger.committable("t", 0, 12) == 12 and not ledger.owns("t", 0)
    assert ledger.committable("t", 1, 3) == 2 and ledger.owns("t", 1)
    stale = Position("t", 0, 9)  # held before the move: releasing it touches nothing now
    ledger.assign([("t", 0)])
    ledger.hold(Position("t", 0, 9, epoch=1))
    ledger.release([stale])
    assert ledger.committable("t", 0, 12) == 9
    with pytest.raises(RuntimeError):
        ledger.in_hand()


def test_a_partition_that_comes_straight_back_commits_what_its_sessions_release_later():
    ledger = OffsetLedger()
    # The rebalance callbacks alone: a bus that is never started, no spool, no consumer.
    bus = KafkaBus(
        BusConfig(kafka={"bootstrap": "127.0.0.1:9"}), BusMetrics(CollectorRegistry()), None
    )
    worker = ConsumerWorker(bus, ["t"], "g", None, None, ledger)
    kept, moved = TopicPartition("t", 0), TopicPartition("t", 1)
    worker.on_partitions_assigned([kept, moved])
    worker._done.update({kept: 8, moved: 4})  # what the poll loop records as it processes
    held = Position("t", 0, 5)
    ledger.hold(held)
    # An eager rebalance: both revoked, only partition 0 comes straight back (fetch position
    # kept, so nothing of it is fetched again); its session is published afterwards.
    worker.on_partitions_revoked([kept, moved])
    worker.on_partitions_assigned([kept])
    assert worker._pending({kept}) == {kept: OffsetAndMetadata(5, "", -1)}
    ledger.release([held])
    assert worker._pending({kept}) == {kept: OffsetAndMetadata(8, "", -1)}
    # Partition 1 moved away: if it returns, it is fetched from its committed offset again.
    worker.on_partitions_revoked([kept])
    worker.on_partitions_assigned([kept, moved])
    assert worker._pending({moved}) == {}


class Member:
    """A sessionizer member's intake over an assembling pipeline, fed by hand."""

    def __init__(self, secret: bytes = SECRET, wall_clock=time.time) -> None:
        self.now = 0.0
        config = CollectorConfig.model_validate({"sessions": {"idle_timeout_seconds": 5}})
        self.metrics = CollectorMetrics(CollectorRegistry())
        self.ledger = OffsetLedger()
        self.ledger.assign([(OBSERVATIONS, 0), (OBSERVATIONS, 1)])
        self.built = AssembledAtOnce(config, self.metrics)
        self.pipeline = CollectorPipeline(
            config, self.metrics, self.built, lambda: self.now, ledger=self.ledger
        )
        # The close-time clock of one process; routed sessions must not depend on it.
        self.pipeline.sessionizer.revisions.clock = RevisionClock(wall_clock)
        self.published: list[tuple[str, ObservationRecord]] = []
        codec = ObservationCodec(Sealer(secret))
        self.intake = ObservationIntake(
            self.pipeline, codec, self.ledger, self._publish, config.routing, lambda: self.now
        )

    async def _publish(self, topic, key, record) -> None:
        self.published.append((key, record))

    async def take(self, record: ObservationRecord, partition: int, offset: int) -> None:
        self.ledger.begin(OBSERVATIONS, partition, offset)
        try:
            await self.intake.handle(OBSERVATIONS, record)
        finally:
            self.ledger.end()


def closes_conv_a_with_its_tool_span(member: Member, now: float) -> None:
    """At `now` conv-a closes as one session, the keyless tool span in it."""
    member.now = now
    member.pipeline.sweep()
    [session] = member.built.sessions
    assert session.conversation_key == "conv-a"
    kinds = [o.kind.value for o in member.built.pending[0].closed.state.observations]
    assert sorted(kinds) == ["llm_call", "tool_execution"]


def test_spans_waiting_on_their_trace_are_forwarded_at_the_link_into_their_conversation():
    routing = Routing()
    routing.pipeline.accept_spans(spans(tool_span("conv-a", "call_0")))
    routing.pipeline.accept_spans(spans(chat_span("conv-a")))
    [(_, by_trace), (_, by_conversation), (_, link)] = routing.queued()
    member = Member()

    async def run() -> None:
        await member.take(by_trace, 0, 10)
        assert member.ledger.committable(OBSERVATIONS, 0, 11) == 10
        await member.take(by_conversation, 1, 20)
        await member.take(link, 0, 11)
        [(key, forwarded)] = member.published
        assert key == CODEC.route_key("conversation", "conv-a")
        # Forwarded: done here; the link is held while its trace is active (next test).
        assert member.ledger.committable(OBSERVATIONS, 0, 12) == 11
        await member.take(forwarded, 1, 21)
        assert member.ledger.committable(OBSERVATIONS, 1, 22) == 20

    asyncio.run(run())
    closes_conv_a_with_its_tool_span(member, 10)
    assert [item.state.held for item in (p.closed for p in member.built.pending)] == [[]]
    member.built.pending[0].settle()
    member.intake.sweep()  # the trace has been quiet for an idle timeout
    assert member.ledger.held() == 0
    assert member.ledger.committable(OBSERVATIONS, 1, 22) == 22
    assert member.ledger.committable(OBSERVATIONS, 0, 12) == 12


def test_a_link_stays_uncommitted_while_its_trace_is_active_so_the_next_owner_knows_it():
    routing = Routing()
    routing.pipeline.accept_spans(spans(chat_span("conv-a")))
    [_, (_, link)] = routing.queued()
    elsewhere = Routing()  # a collector that never saw the trace's keyed span
    elsewhere.pipeline.accept_spans(spans(tool_span("conv-a", "call_1")))
    [(_, later)] = elsewhere.queued()
    dying = Member()
    asyncio.run(dying.take(link, 0, 5))
    dying.now = 3
    dying.intake.sweep()
    assert dying.ledger.committable(OBSERVATIONS, 0, 6) == 5  # the trace is still active

    next_owner = Member()  # took the partition over: replays from the committed offset

    async def replay() -> None:
        await next_owner.take(link, 0, 5)
        await next_owner.take(later, 0, 6)

    asyncio.run(replay())
    [(key, forwarded)] = next_owner.published  # at once: the replayed link named its trace
    assert key == CODEC.route_key("conversation", "conv-a")
    [item] = CODEC.open_observations(forwarded)
    assert item.context.conversation_key == "conv-a"
    next_owner.now = 9
    next_owner.intake.sweep()
    assert next_owner.ledger.committable(OBSERVATIONS, 0, 7) == 7 and next_owner.ledger.held() == 0
    # Committed, still remembered: a later keyless span of the trace still joins its conversation.
    elsewhere.pipeline.accept_spans(spans(tool_span("conv-a", "call_2")))
    [(_, latest)] = elsewhere.queued()
    asyncio.run(next_owner.take(latest, 0, 7))
    assert len(next_owner.published) == 2 and next_owner.ledger.committable(OBSERVATIONS, 0, 8) == 8


def test_a_session_the_next_owner_replays_keeps_its_revision_so_downstream_counts_it_once():
    """A session closed above an older open one of its partition is published, but its offsets
    stay below the open one's: the partition's next owner replays and publishes it again."""
    collector_time = [1_800_000_000.0]
    routing = Routing(wall_clock=lambda: collector_time[0])
    routing.pipeline.accept_spans(spans(chat_span("conv-old")))
    routing.pipeline.accept_spans(spans(chat_span("conv-x")))
    collector_time[0] += 3
    routing.pipeline.accept_spans(spans(chat_span("conv-old", 1)))
    records = [record for _, record in routing.queued() if record.route == "conversation"]
    # Two members whose own clocks are an hour apart.
    leaving = Member(wall_clock=time.time)
    taking_over = Member(wall_clock=lambda: time.time() + 3600)

    async def replay(member: Member) -> None:
        for offset, (record, now) in enumerate(zip(records, (0, 0, 3), strict=True), 1):
            member.now = now
            await member.take(record, 0, offset)

    asyncio.run(replay(leaving))
    leaving.now = 6
    leaving.pipeline.sweep()  # conv-x is idle, conv-old is not
    [published] = leaving.built.sessions
    leaving.built.pending[0].settle()
    assert leaving.ledger.committable(OBSERVATIONS, 0, 4) == 1  # conv-old holds offset 1

    asyncio.run(replay(taking_over))  # the leaving member died: replay from offset 1
    taking_over.now = 6
    taking_over.pipeline.sweep()
    taking_over.now = 9
    taking_over.pipeline.sweep()
    replayed, old = taking_over.built.sessions
    assert (replayed.session_id, replayed.revision) == (published.session_id, published.revision)
    assert replayed.turns == published.turns
    downstream = SeenRevisions(100)
    counted = [
        session
        for session in (published, replayed, old)
        if downstream.first_time(session.session_id, session.revision, SESSIONS)
    ]
    assert counted == [published, old]
    # The trace's new owner forwards spans again, or the replay brings a session this member
    # closed: it already has them, so nothing reopens and nothing stays held.
    held = taking_over.ledger.held()
    asyncio.run(taking_over.take(records[1], 0, 4))
    assert taking_over.metrics.observations_redelivered._value.get() == 1
    assert len(taking_over.built.sessions) == 2 and taking_over.ledger.held() == held
    assert taking_over.pipeline.sessionizer.open_count == 0

    # The conversation continues: a member that remembers conv-x, and one that does not (it
    # never saw the earlier revision), both number the new revision above the published one.
    collector_time[0] += 60
    routing.pipeline.accept_spans(spans(chat_span("conv-x", 1)))
    [late] = [record for _, record in routing.queued() if record.route == "conversation"]
    fresh = Member()
    for member in (taking_over, fresh):
        asyncio.run(member.take(late, 0, 5))
        member.now = 20
        member.pipeline.sweep()
    [continued] = taking_over.built.sessions[2:]
    [alone] = fresh.built.sessions
    assert continued.revision == alone.revision > published.revision
    texts = [turn.text for turn in continued.turns]
    assert texts == [turn.text for turn in published.turns + alone.turns]

    # A collector whose clock is an hour behind stamps the next turn below the last revision:
    # the member that remembers conv-x still numbers it above.
    behind = Routing(wall_clock=lambda: collector_time[0] - 3600)
    behind.pipeline.accept_spans(spans(chat_span("conv-x", 2)))
    [skewed] = [record for _, record in behind.queued() if record.route == "conversation"]
    asyncio.run(taking_over.take(skewed, 0, 6))
    taking_over.now = 30
    taking_over.pipeline.sweep()
    assert taking_over.built.sessions[3].revision == continued.revision + 1


def test_a_keyless_span_a_rebalance_delays_past_the_idle_timeout_still_joins_its_revision():
    """A rebalance stops delivery: the trace's link and its keyless span wait on a partition in
    handover longer than the idle timeout. Nothing closes meanwhile, and after it the waiting
    trace and the open conversation each get a whole idle timeout: one revision, both spans."""
    routing = Routing()
    routing.pipeline.accept_spans(spans(chat_span("conv-a")))
    [(_, by_conversation), (_, link)] = routing.queued()
    elsewhere = Routing()  # a collector that never saw the trace's keyed span
    elsewhere.pipeline.accept_spans(spans(tool_span("conv-a", "call_0")))
    [(_, by_trace)] = elsewhere.queued()
    member = Member()
    everything = [(OBSERVATIONS, 0), (OBSERVATIONS, 1)]

    async def run() -> None:
        await member.take(by_trace, 0, 1)
        await member.take(by_conversation, 1, 1)
        member.ledger.revoke(everything)
        await asyncio.sleep(0)  # the callback comes from a consumer thread via the loop
        member.now = 20  # four idle timeouts into the handover
        member.intake.sweep()
        member.pipeline.sweep()
        assert member.pipeline.sessionizer.open_count == 1 and member.built.sessions == []
        member.ledger.assign(everything)
        await asyncio.sleep(0)
        member.now = 24
        member.intake.sweep()  # the trace waits on: its idle timeout restarted at 20
        member.pipeline.sweep()
        assert member.built.sessions == []
        await member.take(link, 0, 2)
        [(_, forwarded)] = member.published
        await member.take(forwarded, 1, 2)

    asyncio.run(run())
    closes_conv_a_with_its_tool_span(member, 30)


def continues_conv_a(member: Member, routing: Routing, number: int, offset: int) -> Session:
    """Turn `number` of conv-a, through `routing`, after its one session closed: the next
    revision, which this returns once it has closed on idle."""
    routing.pipeline.accept_spans(spans(chat_span("conv-a", number)))
    [(_, later)] = routing.queued()
    asyncio.run(member.take(later, 1, offset))
    member.now += 10
    member.pipeline.sweep()
    [first, continued] = member.built.sessions
    assert continued.revision > first.revision
    return continued


def conv_a_with_a_forwarded_span(
    wall_clock=time.time,
) -> tuple[Routing, Member, list[ObservationRecord]]:
    """A first member closed conv-a, its keyless tool span forwarded into it: partition 1 holds
    the conversation's record at offset 1 and the forwarded one at 2."""
    routing = Routing(wall_clock=wall_clock)
    routing.pipeline.accept_spans(spans(chat_span("conv-a")))
    [(_, by_conversation), (_, link)] = routing.queued()
    elsewhere = Routing(wall_clock=wall_clock)
    elsewhere.pipeline.accept_spans(spans(tool_span("conv-a", "call_0")))
    [(_, by_trace)] = elsewhere.queued()
    first = Member(wall_clock=wall_clock)

    async def run() -> None:
        await first.take(by_trace, 0, 1)
        await first.take(by_conversation, 1, 1)
        await first.take(link, 0, 2)

    asyncio.run(run())
    [(_, forwarded)] = first.published
    asyncio.run(first.take(forwarded, 1, 2))
    closes_conv_a_with_its_tool_span(first, 10)
    return routing, first, [by_conversation, forwarded]


def test_a_replay_after_the_reopen_window_brings_nothing_twice_yet_a_new_turn_still_counts():
    """A partition's commit stayed below a forwarded span for longer than the reopen window (a
    conversation open for hours holds it), then the partition moved: its next owner forwards
    the span again to a member that no longer keeps the closed session's content."""
    now = [1_800_000_000.0]
    routing, member, [_, forwarded] = conv_a_with_a_forwarded_span(lambda: now[0])
    window = member.pipeline.config.sessions.reopen_window_seconds
    member.now, now[0] = 10 + window + 1, now[0] + window + 1  # past the window
    member.pipeline.sweep()
    assert member.pipeline.sessionizer.kept_bytes == 0  # the content is gone
    held = member.ledger.held()
    asyncio.run(member.take(forwarded, 1, 3))  # forwarded again by the trace's next owner
    assert member.metrics.observations_redelivered._value.get() == 1
    assert member.pipeline.sessionizer.open_count == 0 and member.ledger.held() == held
    # The conversation continuing, through a collector, still opens its next revision.
    assert continues_conv_a(member, routing, 1, 4).truncated


def handed_over(first: Member, to: Member) -> None:
    """What `first` wrote to the changelog for the session it closed, restored by `to` as a
    member gaining the partition restores it."""

    async def unused(topic, key, record) -> None:
        raise AssertionError("the record is read off the queue")

    def changelog(member: Member, read_tail) -> PartitionChangelog:
        sessionizer = member.pipeline.sessionizer
        return PartitionChangelog(
            Sealer(SECRET), CODEC.sealer.route_key, member.ledger, unused, sessionizer.revisions,
            LRU[str, str](10), member.metrics, read_tail, limit=10, queue_size=10,
        )  # fmt: skip

    [pending] = first.built.pending
    written = changelog(first, None)
    written.closed(pending.closed, pending.held)
    _kind, _key, record, _held = written.queue.get_nowait()
    value = record.model_dump_json().encode()

    async def read_tail(topic: str, partitions: set[int], limit: int) -> list:
        return [SimpleNamespace(value=value, partition=1, offset=0)]

    asyncio.run(changelog(to, read_tail).restore({(OBSERVATIONS, 1)}))


def test_spans_forwarded_again_when_both_partitions_moved_are_known_from_the_changelog():
    """The conversation's session was published and its observations committed; its trace's
    link was not (the trace still active). Both partitions move: the trace's next owner forwards
    the keyless span again, and the conversation's next owner, holding no copy of the session,
    recognises it by the changelog record the first owner wrote."""
    routing, first, [_, forwarded] = conv_a_with_a_forwarded_span()
    [published] = first.built.sessions
    second = Member()
    handed_over(first, second)
    redelivered = second.metrics.observations_redelivered._value
    asyncio.run(second.take(forwarded, 1, 3))  # forwarded again: a new offset
    assert redelivered.get() == 1 and second.pipeline.sessionizer.open_count == 0
    # The conversation goes on here; the span forwarded again meanwhile is known still.
    routing.pipeline.accept_spans(spans(chat_span("conv-a", 1)))
    [(_, later)] = routing.queued()
    asyncio.run(second.take(later, 1, 4))
    asyncio.run(second.take(forwarded, 1, 5))
    assert redelivered.get() == 2
    second.now = 10
    second.pipeline.sweep()
    [continued] = second.built.sessions
    assert continued.session_id == published.session_id
    assert continued.revision > published.revision and continued.truncated
    kinds = [o.kind.value for o in second.built.pending[0].closed.state.observations]
    assert kinds == ["llm_call"]  # the new turn's, not the tool span again


def test_a_replay_of_a_handed_over_revision_is_rebuilt_whole_and_keeps_its_number():
    """The same two partitions move with nothing committed: the conversation's next owner
    replays its observations at their own offsets, the forwarded span included."""
    _, first, [by_conversation, forwarded] = conv_a_with_a_forwarded_span()
    [published] = first.built.sessions
    second = Member()
    handed_over(first, second)
    asyncio.run(second.take(by_conversation, 1, 1))
    asyncio.run(second.take(forwarded, 1, 2))
    assert second.metrics.observations_redelivered._value.get() == 0
    closes_conv_a_with_its_tool_span(second, 10)
    [copy] = second.built.sessions
    assert copy.revision == published.revision  # downstream counts it once


def test_an_observation_has_the_same_arrival_identity_in_every_member_process():
    code = "from turnwatch.collector.revision_clock import arrival_identity as identity; "
    code += "print(identity(7, 'ab12', 9))"
    identities = {
        subprocess.run(
            [sys.executable, "-c", code],
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True, text=True, check=True,
        ).stdout.strip()
        for seed in ("1", "2")
    }  # fmt: skip
    assert identities == {str(arrival_identity(7, "ab12", 9))}


END_MARKER = {"turnwatch.session.end": "true"}


def test_an_end_marker_that_overtakes_the_last_spans_of_its_conversation_waits_for_them():
    """The last turn's marker went through one collector, its other span through another whose
    record this member reads later: the conversation closes at the marker, after a grace that
    each of its spans restarts, with both in one revision."""
    first, last = chat_span("conv-a", 0), chat_span("conv-a", 1, extra=END_MARKER)
    marking, other = Routing(), Routing()
    marking.pipeline.accept_spans(spans(last))
    other.pipeline.accept_spans(spans(first))
    [(_, marker), _] = marking.queued()
    [(_, overtaken), _] = other.queued()
    member = Member()
    grace = member.intake.end_grace
    assert grace == 2.0  # routing.end_marker_grace_seconds, below the idle timeout of 5

    async def run() -> None:
        await member.take(marker, 1, 1)
        member.now = grace - 0.5
        member.intake.sweep()
        assert member.built.sessions == []
        await member.take(overtaken, 1, 2)
        member.now += grace - 0.5
        member.intake.sweep()
        assert member.built.sessions == []  # the late span restarted the grace

    asyncio.run(run())
    member.now += 0.5
    member.intake.sweep()
    [session] = member.built.sessions
    assert session.close_reason is CloseReason.END_MARKER
    texts = [turn.text for turn in session.turns]
    assert texts == ["question 0", "answer 0", "question 1", "answer 1"]
    assert member.pipeline.sessionizer.open_count == 0
    # A span after the grace is a later revision, as one process makes it.
    assert continues_conv_a(member, marking, 2, 3).close_reason is CloseReason.IDLE


def test_for_an_idle_timeout_after_a_rebalance_an_end_marker_waits_an_idle_timeout():
    """Its conversation's other spans may still wait on a partition that is being replayed."""
    routing = Routing()
    routing.pipeline.accept_spans(spans(chat_span("conv-a", 0, extra=END_MARKER)))
    routing.pipeline.accept_spans(spans(chat_span("conv-b", 0, extra=END_MARKER)))
    [(_, before), _, (_, after), _] = routing.queued()
    member = Member()
    everything = [(OBSERVATIONS, 0), (OBSERVATIONS, 1)]

    async def run() -> None:
        await member.take(before, 1, 1)  # its grace would end at 2
        member.ledger.revoke(everything)
        member.ledger.assign(everything)  # at 0: settling until 5
        await asyncio.sleep(0)
        member.now = 1
        await member.take(after, 1, 2)

    asyncio.run(run())
    member.now = 1 + member.intake.end_grace
    member.intake.sweep()
    assert member.built.sessions == []
    member.now = 5
    member.intake.sweep()
    assert [s.conversation_key for s in member.built.sessions] == ["conv-a"]
    member.now = 6  # an idle timeout after conv-b's marker
    member.intake.sweep()
    assert [s.close_reason for s in member.built.sessions] == [CloseReason.END_MARKER] * 2


def test_a_trace_that_never_gets_a_link_becomes_a_session_of_its_own():
    routing = Routing()
    routing.pipeline.accept_spans(spans(tool_span("conv-a", "call_0")))
    [(_, by_trace)] = routing.queued()
    member = Member()
    asyncio.run(member.take(by_trace, 0, 3))
    member.now = 6
    member.intake.sweep()  # waited an idle timeout: sessionized under its trace id
    member.now = 12
    member.pipeline.sweep()
    [session] = member.built.sessions
    assert session.key_source == "trace_id" and member.ledger.committable(OBSERVATIONS, 0, 4) == 3


@pytest.mark.parametrize(
    ("record", "wire", "not_sealed", "added"),
    [
        (Context, WireContext, set(), []),
        (Message, WireMessage, set(), []),
        (ToolCallPart, WireToolCall, set(), []),
        (ToolExecution, WireToolExecution, set(), []),
        (Observation, WireObservation, {"content", "resends"}, ["channel"]),
    ],
)
def test_the_wire_form_carries_every_field_of_its_record(record, wire, not_sealed, added):
    fields = [field.name for field in dataclasses.fields(record) if field.name not in not_sealed]
    assert [*fields, *added] == list(wire.model_fields)


def test_an_observation_comes_back_from_the_wire_as_it_was_sealed():
    call = ToolCallPart("call-1", "lookup_order", {"order_id": "4411"})
    observation = Observation(
        ObservationKind.LLM_CALL,
        "genai",
        "trace-1",
        "span-1",
        1_000,
        2_000,
        inputs=[
            Message("user", "where is my order?"),
            Message(
                "tool", tool_call_id="call-1", tool_response={"status": "packed"}, truncated=True
            ),
        ],
        outputs=[Message("assistant", tool_calls=[call], finish_reason="tool_calls")],
        system_instructions=["be brief"],
        tool=ToolExecution("call-1", "lookup_order", {"order_id": "4411"}, "packed", None),
        provider="openai",
        model="gpt-test",
        input_tokens=12,
        incomplete_reasons=["truncated"],
        size_bytes=640,
    )
    context = Context(
        "shop",
        "conv-a",
        "gen_ai.conversation.id",
        "user-9",
        True,
        False,
        None,
        "2.1",
        "helper",
        None,
        "scope",
        3,
        {"deployment.environment": "prod", "service.namespace": "shop"},
    )
    sealed = CODEC.seal_observations(
        "conversation", [RoutedObservation("trace-1", 5, context, observation, 7)]
    )
    [opened] = CODEC.open_observations(sealed)
    assert dataclasses.asdict(opened.context) == dataclasses.asdict(context)
    assert dataclasses.asdict(opened.observation) == dataclasses.asdict(observation)
    assert opened.observation.kind is ObservationKind.LLM_CALL
    assert isinstance(opened.observation.outputs[0].tool_calls[0], ToolCallPart)


def test_records_of_another_deployment_or_malformed_ones_are_refused_with_a_reason():
    foreign = ObservationCodec(Sealer(b"another-deployment-0123456789")).seal_links([])
    malformed = CODEC._seal("conversation", orjson.dumps([{"trace_id": 3}]))
    member = Member()
    for record, reason in ((foreign, "unsealable"), (malformed, "invalid")):
        with pytest.raises(BadObservations) as refused:
            asyncio.run(member.take(record, 0, 1))
        assert refused.value.reason == reason
        assert member.metrics.observations_dropped.labels(reason)._value.get() == 1
    assert member.ledger.held() == 0


def test_partitions_that_move_away_take_their_buffered_sessions_with_them():
    routing = Routing()
    routing.pipeline.accept_spans(spans(chat_span("conv-a")))
    routing.pipeline.accept_spans(spans(chat_span("conv-b")))
    [(_, a), (_, _link_a), (_, b), (_, _link_b)] = routing.queued()
    member = Member()

    async def run() -> None:
        await member.take(a, 0, 1)
        await member.take(b, 1, 1)
        member.ledger.revoke([(OBSERVATIONS, 0), (OBSERVATIONS, 1)])
        member.ledger.assign([(OBSERVATIONS, 1)])  # partition 0 moved to another member
        await asyncio.sleep(0)  # the callback comes from a consumer thread via the loop
        await member.take(a, 0, 2)  # already queued when the partition moved: not taken

    asyncio.run(run())
    assert member.pipeline.sessionizer.open_count == 1
    member.pipeline.close_all()
    assert [s.conversation_key for s in member.built.sessions] == ["conv-b"]


def _with_kafka(settings):
    kafka = settings.bus.kafka.model_copy(update={"bootstrap": "127.0.0.1:9"})
    return settings.model_copy(update={"bus": settings.bus.model_copy(update={"kafka": kafka})})


def test_the_distributed_roles_refuse_to_start_without_kafka_or_a_shared_secret(tmp_path):
    routed = make_settings(**{"routing.mode": "route", "data_dir": str(tmp_path)})
    with pytest.raises(ValueError, match="needs Kafka"):
        build_roles(ServiceContext(routed), "collector")
    with_kafka = _with_kafka(routed)
    with pytest.raises(SecretError, match="share one key"):
        build_roles(ServiceContext(with_kafka), "collector")

    async def consume() -> None:
        bus = EmbeddedBus(BusConfig(), BusMetrics(CollectorRegistry()), None)
        await bus.consume([OBSERVATIONS], "g", None, asyncio.Event(), ledger=OffsetLedger())

    with pytest.raises(ValueError, match="need Kafka"):
        asyncio.run(consume())


def test_a_routing_collector_refuses_the_write_ahead_log(tmp_path):
    # It builds no sessions, so no claim would hold a frame until the bus has its observations.
    routed = make_settings(
        **{"routing.mode": "route", "wal.enabled": True, "data_dir": str(tmp_path)}
    )
    with_kafka = _with_kafka(routed)
    with pytest.raises(ConfigError, match=r"wal\.enabled needs routing\.mode: sessionize"):
        build_roles(ServiceContext(with_kafka), "collector")
    assert not (tmp_path / "wal").exists()  # refused before the log was opened


def test_the_cli_says_what_the_distributed_roles_miss(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("TURNWATCH_ROUTING__MODE", "route")
    assert main(["serve", "--data-dir", str(tmp_path), "--ops-port", "0"]) == 2
    assert "routing.mode: route needs Kafka" in capsys.readouterr().err
    monkeypatch.delenv("TURNWATCH_ROUTING__MODE")
    serve = ["serve", "--role", "sessionizer", "--kafka", "127.0.0.1:9", "--ops-port", "0"]
    assert main([*serve, "--data-dir", str(tmp_path)]) == 2
    assert "needs deid.secret or deid.secret_file" in capsys.readouterr().err


def test_a_request_with_more_content_than_a_record_holds_is_split_in_order():
    routing = Routing()
    text = "x" * (RECORD_CONTENT_BYTES // 3)
    big = [chat_span("conv-a", n, extra={"gen_ai.input.messages": text}) for n in range(7)]
    routing.pipeline.accept_spans(spans(*big))
    records = [record for _, record in routing.queued() if record.route == "conversation"]
    assert len(records) == 4  # two spans of a third of the limit (and a little more) each
    opened = [item for record in records for item in CODEC.open_observations(record)]
    assert [item.observation.span_id for item in opened] == [view.span_id for view in spans(*big)]
    assert all(len(record.model_dump_json()) < 4 * RECORD_CONTENT_BYTES for record in records)


def test_all_roles_in_route_mode_run_the_sessionizer_beside_the_routing_collector(tmp_path):
    settings = make_settings(
        **{"routing.mode": "route", "data_dir": str(tmp_path), "deid.secret": SECRET.decode()}
    )
    kafka = settings.bus.kafka.model_copy(update={"bootstrap": "127.0.0.1:9"})
    settings = settings.model_copy(update={"bus": settings.bus.model_copy(update={"kafka": kafka})})
    roles = build_roles(ServiceContext(settings), "all")
    try:
        assert roles.collector is not None and roles.collector.router is not None
        assert [consumer.name for consumer in roles.consumers] == [
            "sessionizer",
            "scorer",
            "exporter",
        ]
        sessionizer = roles.consumers[0]
        assert sessionizer.topics == (OBSERVATIONS,) and sessionizer.ledger is not None
        assert sessionizer.group == "turnwatch-sessionizers"
    finally:
        for consumer in roles.consumers:
            if consumer.close is not None:
                consumer.close()
