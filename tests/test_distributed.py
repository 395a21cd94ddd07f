"""The distributed layout on a real Kafka-protocol broker: collectors that route, a sessionizer
consumer group that builds the sessions.

Three collectors in `routing.mode: route` and two sessionizer members get the spans of corpus
conversations (tool calls, resent history, roots that name no conversation and join it through
their trace) spread round-robin over the collectors, then a late returning turn for some of them.
The sessions on `turnwatch.sessions` must be exactly those one embedded collector builds from the
same spans, de-identified the same way, with the same findings; and nothing readable may cross
`turnwatch.observations`. Partition moves hand open conversations over by replay: a member that
leaves (SIGTERM's path), and a `turnwatch serve --role sessionizer` process killed with SIGKILL
while a new member joins, lose no turn, and what the next owner publishes again is counted once
downstream.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import signal
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import orjson
import pytest
from kafka.partitioner.default import murmur2
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client import CollectorRegistry
from turnwatch.collector.deid.secret import session_id_key
from turnwatch.collector.metrics import CollectorMetrics
from turnwatch.collector.otlp_common import DecodeLimits
from turnwatch.collector.otlp_proto import decode_traces
from turnwatch.collector.sealing import Sealer, Unsealable
from turnwatch.scorers.config import ScorerConfig
from turnwatch.scorers.runner import Scorer

from benchmarks.corpus import make_corpus
from benchmarks.corpus.emit import Emitter
from benchmarks.corpus.generate import write_contracts
from tests.conftest import make_settings, start_service
from tests.kafka_broker import TansuBroker, read_topic, topic_size, uncommitted, with_bus
from tests.otel_chatbot import Exchange, run_conversation
from tests.otlp_requests import LOOPBACK, PROTOBUF, metric_value
from tests.serve_process import ServeProcess
from tests.stages import assembling_pipeline
from tests.waiting import eventually
from turnwatch.app.roles import Roles, build_roles
from turnwatch.app.serve import BackgroundService
from turnwatch.app.sessionizer_role import SessionizerRole
from turnwatch.app.settings import Settings
from turnwatch.bus.records import OBSERVATIONS, SESSIONS, ObservationRecord
from turnwatch.revisions import SeenRevisions
from turnwatch.schema import Session

pytestmark = pytest.mark.slow  # a broker, five services and Presidio three times

SECRET = "a-deployment-secret-shared-by-every-replica"
CONVERSATIONS = 60
CORPUS_SIZE = 300
HANDOVER_CONVERSATIONS = 30
LATE = 6
PARTITIONS = 4
SPANS_PER_REQUEST = 16
FAST_GROUP = {
    "kafka.partitions": PARTITIONS,
    # Tansu's first join waits the rebalance timeout, which kafka-python takes from here.
    "kafka.max_poll_interval_ms": 3000,
    "kafka.session_timeout_ms": 4000,
    "kafka.heartbeat_interval_ms": 500,
    "kafka.probe_interval_seconds": 0.5,
    "kafka.request_timeout_ms": 2000,
    "kafka.delivery_timeout_ms": 4000,
    "shutdown_timeout_seconds": 3,
}


def settings_for(data_dir: Path, **overrides: object) -> Settings:
    return make_settings(
        **{
            "deid.secret": SECRET,
            "data_dir": str(data_dir),
            # Well above the routing hop's delay on a loaded machine (a keyless span waits for
            # its trace's link, then is forwarded): a closer idle timeout splits conversations.
            "sessions.idle_timeout_seconds": 5.0,
            "sessions.sweep_interval_seconds": 0.1,
            **overrides,
        }
    )


def kafka_settings(bootstrap: str, data_dir: Path, **overrides: object) -> Settings:
    return with_bus(
        settings_for(data_dir, **overrides), **{"kafka.bootstrap": bootstrap, **FAST_GROUP}
    )


class Spans:
    """Corpus conversations as OTLP requests, in the order the chatbot's exporter sent them."""

    def __init__(self, conversations: int) -> None:
        # The corpus needs a few hundred conversations to hold every kind; the first ones do.
        corpus = make_corpus(23, "dev", max(CORPUS_SIZE, conversations))
        self.corpus = dataclasses.replace(
            corpus, conversations=corpus.conversations[:conversations]
        )
        self.exporter = InMemorySpanExporter()
        self.providers: dict[str, TracerProvider] = {}
        for service in self.corpus.contracts():
            provider = TracerProvider(resource=Resource.create({"service.name": service}))
            provider.add_span_processor(SimpleSpanProcessor(self.exporter))
            self.providers[service] = provider

    def take(self) -> list[bytes]:
        spans: list[ReadableSpan] = list(self.exporter.get_finished_spans())
        self.exporter.clear()
        return [
            encode_spans(spans[start : start + SPANS_PER_REQUEST]).SerializeToString()
            for start in range(0, len(spans), SPANS_PER_REQUEST)
        ]

    def conversations(self, start: int = 0, stop: int | None = None) -> list[bytes]:
        emitter = Emitter(self.providers)
        for conversation in self.corpus.conversations[start:stop]:
            emitter.emit(conversation)
        return self.take()

    def late_turns(self) -> list[bytes]:
        for conversation in self.corpus.conversations[:LATE]:
            run_conversation(
                self.providers[conversation.service],
                conversation.conversation_id,
                [Exchange(user="One more thing: is that final?", answer="Yes, it is final.")],
                user_id=conversation.user.customer_id,
            )
        return self.take()

    def raw_values(self) -> set[str]:
        values = set()
        for conversation in self.corpus.conversations:
            values |= {conversation.conversation_id, conversation.user.customer_id}
            values |= {m.text for m in conversation.messages if m.text and len(m.text) > 12}
        return values


def post(urls: Iterator[str], requests: list[bytes]) -> None:
    for body, url in zip(requests, urls, strict=False):
        response = LOOPBACK.post(
            f"{url}/v1/traces", content=body, headers={"Content-Type": PROTOBUF}
        )
        assert response.status_code == 200, response.text


class Distributed:
    """Three routing collectors and (by default) two sessionizer members, in this process."""

    def __init__(
        self, bootstrap: str, tmp_path: Path, members: int = 2, **overrides: object
    ) -> None:
        self.bootstrap = bootstrap
        self.tmp_path = tmp_path
        self.overrides = overrides
        self.members: list[SessionizerRole] = []
        self.services: list[BackgroundService] = []
        self.collector_urls = []
        for number in range(3):
            settings = kafka_settings(
                bootstrap,
                tmp_path / f"collector-{number}",
                **{"routing.mode": "route"},
                **overrides,
            )
            background = BackgroundService(
                settings, functools.partial(build_roles, role="collector")
            )
            service = background.start(timeout=60)
            self.services.append(background)
            self.collector_urls.append(f"http://127.0.0.1:{service.ports.otlp_http}")
        self.member_ops: list[str] = []
        self.member_services: list[BackgroundService] = []
        for _ in range(members):
            self.join()

    def join(self) -> SessionizerRole:
        """One more sessionizer member in the group."""
        number = len(self.member_services)
        settings = kafka_settings(
            self.bootstrap, self.tmp_path / f"sessionizer-{number}", **self.overrides
        )
        background = BackgroundService(settings, self._sessionizer)
        service = background.start(timeout=60)
        self.services.append(background)
        self.member_services.append(background)
        self.member_ops.append(f"http://127.0.0.1:{service.ports.ops}")
        return self.members[-1]

    def _sessionizer(self, context) -> Roles:
        member = SessionizerRole(context)
        self.members.append(member)
        return Roles("sessionizer", consumers=[member.consumer()])

    def round_robin(self) -> Iterator[str]:
        return itertools.cycle(self.collector_urls)

    def wait_for_both_members(self) -> None:
        def owned() -> list[set]:
            return [set(member.ledger.assigned) for member in self.members]

        eventually(
            owned,
            lambda sets: (
                all(sets) and not sets[0] & sets[1] and len(sets[0] | sets[1]) == PARTITIONS
            ),
            timeout=40,
            what="both sessionizer members to own partitions",
        )

    def settled(self, members: list[SessionizerRole] | None = None) -> None:
        """Nothing open, held or waiting anywhere, every observation committed."""
        running = members or self.members

        def state() -> tuple:
            return (
                sum(m.ledger.held() for m in running),
                sum(m.pipeline.sessionizer.open_count for m in running),
                sum(m.handoff.queue.qsize() for m in running),
                uncommitted(self.bootstrap, self.members[0].group, OBSERVATIONS),
            )

        eventually(state, lambda s: s == (0, 0, 0, 0), timeout=60, interval=0.3, what="settled")

    def stop_member(self, number: int) -> None:
        """SIGTERM's path: stop consuming, commit what is published, hand the rest over."""
        service = self.member_services[number]
        self.services.remove(service)
        service.stop()

    def stop(self) -> None:
        for background in reversed(self.services):
            background.stop()


def by_revision(sessions: list[Session]) -> dict[tuple[str, int], Session]:
    """Each session's revisions numbered 1, 2, ... in their order: revision numbers come from
    each sessionizer's clock, so two deployments agree on their order, not their values."""
    keyed = {(s.session_id, s.revision): s for s in sessions}
    assert len(keyed) == len(sessions), "a session revision was published twice"
    nth: dict[tuple[str, int], Session] = {}
    for session_id, revision in sorted(keyed):
        count = sum(1 for key in nth if key[0] == session_id)
        nth[(session_id, count + 1)] = keyed[(session_id, revision)]
    return nth


def comparable(session: Session) -> dict:
    """The whole record but its revision number (see `by_revision`), trace ids as a set:
    collectors publish in their own order."""
    record = session.model_dump(mode="json", exclude={"revision"})
    record["trace_ids"] = sorted(record["trace_ids"])
    return record


def findings(scorer: Scorer, session: Session) -> dict:
    record = scorer.score(session)
    return record.model_dump(mode="json", exclude={"scored_at", "revision"})


def test_collectors_route_sessionizers_build_the_same_sessions_as_one_process(bootstrap, tmp_path):
    spans = Spans(CONVERSATIONS)
    first, late = spans.conversations(), spans.late_turns()

    distributed = Distributed(bootstrap, tmp_path)  # its members join while the embedded runs
    try:
        embedded = start_service(settings_for(tmp_path / "embedded"), deidentify=True)
        try:
            post(itertools.repeat(embedded.http_url), first)
            embedded.sink.wait_for(CONVERSATIONS, timeout=60)
            post(itertools.repeat(embedded.http_url), late)
            expected = by_revision(embedded.sink.wait_for(CONVERSATIONS + LATE, timeout=60))
        finally:
            embedded.background.stop()
        assert len(expected) == CONVERSATIONS + LATE

        distributed.wait_for_both_members()
        post(distributed.round_robin(), first)
        distributed.settled()
        assert topic_size(bootstrap, SESSIONS) == CONVERSATIONS
        # The members kept only what a call added to the history it resent (the sessions below
        # are still those one process builds).
        kept = [
            call
            for member in distributed.members
            for session in member.pipeline.sessionizer._kept.values()
            for call in session.observations
        ]
        assert any(call.resends is not None for call in kept)
        post(distributed.round_robin(), late)
        distributed.settled()
        published = read_topic(bootstrap, SESSIONS, CONVERSATIONS + LATE)
        assert topic_size(bootstrap, SESSIONS) == CONVERSATIONS + LATE
        # Both members built sessions: the conversations really were partitioned; and spans that
        # named no conversation reached theirs through a link.
        opened = [
            metric_value(ops, "turnwatch_sessions_opened_total") for ops in distributed.member_ops
        ]
        assert all(opened) and sum(opened) == CONVERSATIONS + LATE
        forwarded = sum(
            metric_value(ops, "turnwatch_observations_routed_total", route="forwarded")
            for ops in distributed.member_ops
        )
        assert forwarded > 0
        observations = read_topic(bootstrap, OBSERVATIONS, topic_size(bootstrap, OBSERVATIONS))
    finally:
        distributed.stop()

    got = by_revision([Session.model_validate_json(record.value) for record in published])
    assert got.keys() == expected.keys()
    contracts = write_contracts(spans.corpus.contracts(), tmp_path / "contracts")[0].parent
    scorer = Scorer(ScorerConfig(contracts_dir=contracts))
    for identity, session in expected.items():
        assert got[identity].turns == session.turns, identity
        assert comparable(got[identity]) == comparable(session), identity
        assert findings(scorer, got[identity]) == findings(scorer, session)
    assert sum(len(s.turns) for s in got.values()) == sum(len(s.turns) for s in expected.values())
    routes = {ObservationRecord.model_validate_json(r.value).route for r in observations}
    assert routes == {"conversation", "trace", "link"}

    raw = spans.raw_values()
    for record in observations:
        text = record.key + record.value
        assert not [value for value in raw if value.encode() in text]
    sealed = ObservationRecord.model_validate_json(observations[0].value)
    opened = Sealer(SECRET.encode()).open(sealed.sealed, sealed.route.encode())
    assert orjson.loads(opened)  # the content is there, for the deployment key only
    with pytest.raises(Unsealable):
        Sealer(b"another-deployment-secret-entirely").open(sealed.sealed, sealed.route.encode())


def assembled_locally(requests: list[bytes]) -> dict[str, int]:
    """Session id -> turns, as one collector assembles the same spans (no broker, no Presidio)."""
    config = settings_for(Path("unused")).collector
    # Session ids keyed as the sessionizer members key them, with the deployment secret.
    id_key = session_id_key(SECRET.encode())
    pipeline, built = assembling_pipeline(
        config, CollectorMetrics(CollectorRegistry()), id_key=id_key
    )
    for body in requests:
        pipeline.accept_spans(decode_traces(body, DecodeLimits()).items)
    pipeline.close_all()
    return {session.session_id: len(session.turns) for session in built.sessions}


def test_a_member_that_leaves_hands_its_open_conversations_over_by_replay(tmp_path):
    broker = TansuBroker()
    broker.start()
    spans = Spans(HANDOVER_CONVERSATIONS)
    half = HANDOVER_CONVERSATIONS // 2
    before, after = spans.conversations(0, half), spans.conversations(half)
    # Long enough that nothing closes while the leaving member stops.
    distributed = Distributed(broker.bootstrap, tmp_path, **{"sessions.idle_timeout_seconds": 8.0})
    try:
        distributed.wait_for_both_members()
        post(distributed.round_robin(), before)
        distributed.settled()
        published_before = topic_size(broker.bootstrap, SESSIONS)
        post(distributed.round_robin(), after)
        leaving, staying = distributed.members
        eventually(
            lambda: leaving.pipeline.sessionizer.open_count,
            lambda count: count > 0,
            what="the leaving member to hold open conversations",
        )
        distributed.stop_member(0)
        eventually(
            lambda: staying.ledger.assigned,
            lambda owned: len(owned) == PARTITIONS,
            timeout=30,
            what="the staying member to own every partition",
        )
        distributed.settled(members=[staying])
        published = read_topic(broker.bootstrap, SESSIONS, HANDOVER_CONVERSATIONS)
        assert topic_size(broker.bootstrap, SESSIONS) == HANDOVER_CONVERSATIONS
    finally:
        distributed.stop()
        broker.stop()
    assert published_before == half
    sessions = by_revision([Session.model_validate_json(record.value) for record in published])
    assert {revision for _, revision in sessions} == {1}
    turns = {session_id: len(s.turns) for (session_id, _), s in sessions.items()}
    assert turns == assembled_locally(before + after)


KILL_CONVERSATIONS = 24
HOLDER_TURN = Exchange(user="Still there? One more question.", answer="Yes, go ahead.")


def partition_of(conversation_id: str) -> int:
    """The partition of `turnwatch.observations` a conversation is routed to (kafka-python's
    default partitioner over the sealed route key)."""
    key = Sealer(SECRET.encode()).route_key("conversation", conversation_id).encode()
    return (murmur2(key) & 0x7FFFFFFF) % PARTITIONS


class Holders:
    """One conversation per partition that stays open (a turn every `interval`) while the
    others close: each partition's commits stay below its holder's first observation, so a
    member that dies leaves every session it published since then uncommitted, and the
    partition's next owner replays and publishes each of them again."""

    def __init__(self, service: str) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider(resource=Resource.create({"service.name": service}))
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.ids: dict[int, str] = {}
        for number in itertools.count():
            self.ids.setdefault(partition_of(f"holder-{number}"), f"holder-{number}")
            if len(self.ids) == PARTITIONS:
                break
        self.posted: list[bytes] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def turn(self) -> list[bytes]:
        for conversation in self.ids.values():
            run_conversation(self.provider, conversation, [HOLDER_TURN])
        spans = list(self.exporter.get_finished_spans())
        self.exporter.clear()
        requests = [encode_spans(spans).SerializeToString()]
        self.posted.extend(requests)
        return requests

    def keep_open(self, urls: list[str], interval: float) -> None:
        def run() -> None:
            turns = itertools.cycle(urls)
            with httpx.Client(timeout=30) as client:
                while not self._stop.wait(interval):
                    for body in self.turn():
                        response = client.post(
                            f"{next(turns)}/v1/traces",
                            content=body,
                            headers={"Content-Type": PROTOBUF},
                        )
                        assert response.status_code == 200, response.text

        self._thread = threading.Thread(target=run, daemon=True)
        self._thread.start()

    def let_close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(30)


def member_process(bootstrap: str, workdir: Path, idle_timeout: float) -> ServeProcess:
    """`turnwatch serve --role sessionizer` as a process of its own, configured like the
    members in this process."""
    settings = {
        "deid.secret": SECRET,
        "deid.workers": 1,
        "sessions.idle_timeout_seconds": idle_timeout,
        "sessions.sweep_interval_seconds": 0.1,
        "bus.kafka.bootstrap": bootstrap,
        **{f"bus.{key}": value for key, value in FAST_GROUP.items()},
    }
    return ServeProcess(workdir, settings, role="sessionizer")


def test_a_member_killed_mid_run_and_a_new_one_joining_lose_nothing_and_count_nothing_twice(
    tmp_path,
):
    broker = TansuBroker()
    broker.start()
    spans = Spans(KILL_CONVERSATIONS)
    half = KILL_CONVERSATIONS // 2
    before, after = spans.conversations(0, half), spans.conversations(half)
    holders = Holders(next(iter(spans.providers)))
    idle = 8.0  # above a rebalance's pause, so holders stay open through it
    distributed = Distributed(
        broker.bootstrap, tmp_path, members=1, **{"sessions.idle_timeout_seconds": idle}
    )
    doomed = member_process(broker.bootstrap, tmp_path / "doomed", idle)
    try:
        [staying] = distributed.members
        eventually(
            lambda: len(staying.ledger.assigned),
            lambda owned: owned == PARTITIONS // 2,
            timeout=60,
            what="the member process to own half the partitions",
        )
        doomed_partitions = set(range(PARTITIONS)) - {p for _, p in staying.ledger.assigned}
        post(distributed.round_robin(), holders.turn())
        eventually(
            lambda: (
                staying.pipeline.sessionizer.open_count,
                doomed.metric("turnwatch_sessions_open"),
            ),
            lambda counts: counts == (PARTITIONS // 2, PARTITIONS // 2),
            what="every holder open, on its partition's owner",
        )
        holders.keep_open(distributed.collector_urls, interval=2.0)
        post(distributed.round_robin(), before)
        doomed_share = sum(
            partition_of(conversation.conversation_id) in doomed_partitions
            for conversation in spans.corpus.conversations[:half]
        )
        assert 0 < doomed_share < half
        eventually(
            lambda: doomed.metric("turnwatch_bus_records_produced_total", topic=SESSIONS),
            lambda published: published >= doomed_share,
            timeout=60,
            what="the member process to publish its conversations",
        )
        assert doomed.kill() == -signal.SIGKILL  # with its holders open: nothing committed
        joining = distributed.join()
        post(distributed.round_robin(), after)
        eventually(
            lambda: (staying.ledger.assigned, joining.ledger.assigned),
            lambda owned: all(owned) and len(owned[0] | owned[1]) == PARTITIONS,
            timeout=60,
            what="the staying and the joining member to own every partition",
        )
        holders.let_close()
        distributed.settled(members=[staying, joining])
        records = read_topic(broker.bootstrap, SESSIONS, topic_size(broker.bootstrap, SESSIONS))
    finally:
        holders.let_close()
        distributed.stop()
        if doomed.process.poll() is None:
            doomed.kill()
        broker.stop()

    published = [Session.model_validate_json(record.value) for record in records]
    downstream = SeenRevisions(10_000)  # what scorers and exporters count a revision by
    counted = [s for s in published if downstream.first_time(s.session_id, s.revision, SESSIONS)]
    # The dead member's sessions came again from the next owner, and were taken as redeliveries.
    assert len(published) - len(counted) >= doomed_share
    revisions: dict[str, list[Session]] = {}
    for session in counted:
        revisions.setdefault(session.session_id, []).append(session)
    conversations = assembled_locally(before + after)
    holding = assembled_locally(holders.posted)
    assert revisions.keys() == conversations.keys() | holding.keys()
    for session_id, turns in conversations.items():
        seen = [
            (s.revision, len(s.turns), s.close_reason, s.truncated, s.key_source)
            for s in revisions[session_id]
        ]
        assert len(seen) == 1, (turns, seen)
        [session] = revisions[session_id]  # each conversation counted once, every turn once
        assert len(session.turns) == turns, session_id
    for session_id, turns in holding.items():
        # A holder may close during a rebalance and continue: a later revision, whole again.
        latest = max(revisions[session_id], key=lambda session: session.revision)
        assert len(latest.turns) == turns, session_id
        contents = [tuple(turn.text for turn in s.turns) for s in revisions[session_id]]
        assert len(set(contents)) == len(contents)
