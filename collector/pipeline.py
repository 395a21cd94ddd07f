"""The collector pipeline: decoded spans and logs -> sessions -> sampling -> the next stage.

Stages run on the server's event loop, one request at a time, so they need no locks. Closed
sessions are sampled before anything expensive happens (only sampled sessions are assembled and,
later, de-identified), then offered to the next stage, which must not block the request path:
in `turnwatch serve` that is the handoff queue (handoff.py); a test that wants the sessions at
once composes a stage that assembles and keeps them.

With the write-ahead log on (`wal`), each accepted request's frame number reaches the sessionizer
with its items, each closing session becomes a `Claim` on the log that travels with it, and the
idle sweep also trims the log (wal/durability.py).

In the distributed layout the same pipeline runs split in two: a collector given a `router`
decodes and routes (router.py), and the sessionizer role feeds what it consumes into
`add_routed`, with the bus position each observation came from; a closed session's positions are
released in the `ledger` once it has been handed on, so offsets are committed only then.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Protocol

from turnwatch.collector.assembler import EPOCH, assemble, ns_to_datetime
from turnwatch.collector.config import CollectorConfig
from turnwatch.collector.dialects import build_log_decoders, build_span_decoders
from turnwatch.collector.identity import ContextReader
from turnwatch.collector.metrics import CollectorMetrics
from turnwatch.collector.observations import RoutedObservation
from turnwatch.collector.records import Context, LogView, Observation, SpanView
from turnwatch.collector.router import ObservationRouter
from turnwatch.collector.sampler import Sampler, SamplingSignals
from turnwatch.collector.session_keys import session_id_of_key
from turnwatch.collector.sessionizer import TRACE_KEY_SOURCE, ClosedSession, Sessionizer
from turnwatch.collector.wal.durability import Claim, Durability

from turnwatch.bus.ledger import OffsetLedger, Position
from turnwatch.schema import CloseReason, SamplingDecision, Session

log = logging.getLogger("turnwatch.collector")

CAPPED_REASONS = frozenset({CloseReason.TURN_CAP, CloseReason.BYTE_CAP, CloseReason.EVICTED})
TRACE_KEY_WARNING_SECONDS = 60.0
"""At most one warning a minute about sessions keyed by trace id: naive instrumentation makes
one per model call, and a log line per session would drown everything else."""


@dataclass(slots=True)
class PendingSession:
    """A closed, sampled session waiting for assembly and the next stage."""

    closed: ClosedSession
    decision: SamplingDecision
    claim: Claim | None = None
    """Its hold on the write-ahead log; released once the next stage is done with it."""
    held: list[Position] = field(default_factory=list)
    """Where its observations sit on the bus (sessionizer role), released once handed on."""
    ledger: OffsetLedger | None = None

    def settle(self) -> None:
        """The next stage is done with it (delivered, or dropped and counted): the log may trim
        its frames and the bus commit its observations. Once only."""
        if self.claim is not None:
            self.claim.release()
        if self.ledger is not None:
            self.ledger.release(self.held)
            self.held = []

    def superseded(self) -> bool:
        """A partition it came from moved to another member, which replays and publishes it."""
        return self.ledger is not None and not self.ledger.current(self.held)


class PendingStage(Protocol):
    """Where the request path puts closed, sampled sessions; `offer` must return at once."""

    def offer(self, pending: PendingSession) -> None: ...

    def overloaded(self) -> bool:
        """True when the receivers should answer 503 rather than accept more."""
        ...


HandedOn = Callable[[BaseException | None], None]
"""Told by a stage still working on a session that it handed it on (None) or failed (why)."""


class SessionSink(Protocol):
    """A stage after assembly: receives whole sessions (de-identification plugs in here)."""

    async def deliver(self, session: Session, handed_on: HandedOn | None = None) -> bool:
        """Hand `session` on: False once the stage has it; True while it is still working on
        it (the write-ahead log and the bus hold it until then), and then it calls `handed_on`
        in the same step as the next stage takes the session (never, if a shutdown stops it
        first). In the same step, not from a done callback a turn of the loop later: the log's
        done mark must follow the bus taking the session with no other task between, since a
        kill there has the restart publish the session again as a new revision."""
        ...


class LoggingSink:
    """Logs that a session was handed on: ids and counts only, never message text."""

    async def deliver(self, session: Session, handed_on: HandedOn | None = None) -> bool:
        log.info(
            "session closed",
            extra={
                "session_id": session.session_id,
                "revision": session.revision,
                "service": session.service,
                "turns": len(session.turns),
                "close_reason": session.close_reason.value,
                "sampling_reason": session.sampling.reason.value,
                "incomplete": session.incomplete,
            },
        )
        return False


class SessionBuilder:
    """Assembles a closed, sampled session into its wire record (off the request path).

    `id_key` keys the session id (`session_id_of_key`): the deployment's session-id key."""

    def __init__(self, service_fallback: str, metrics: CollectorMetrics, id_key: bytes) -> None:
        self.service_fallback = service_fallback
        self.metrics = metrics
        self.id_key = id_key

    def __call__(self, pending: PendingSession) -> Session:
        # CPU time of this thread: what assembling cost, not how long other work made it wait.
        started_assembly = time.thread_time()
        closed, decision = pending.closed, pending.decision
        state = closed.state
        transcript = assemble(state.observations)
        reasons = list(transcript.incomplete_reasons)
        if state.dropped_spans:
            reasons.append("dropped_attributes")
        if not transcript.turns:
            reasons.append("no_turns")
        started = ns_to_datetime(state.first_ns) or EPOCH
        ended = ns_to_datetime(state.last_ns) or started
        # The turn dicts come from our own assembler, whose keys tests pin to the schema; skipping
        # the unknown-key check of every nested model saves a sixth of validation. Types are
        # still validated, and consumers of the wire record still forbid unknown keys.
        session = Session.model_validate(
            dict(
                session_id=session_id_of_key(state.key, self.id_key),
                revision=state.revision,
                conversation_key=state.conversation_key,
                key_source=state.key_source,
                service=state.service or self.service_fallback,
                user_id=state.user_id,
                provenance=dict(
                    providers=transcript.providers,
                    models=transcript.models,
                    service_version=state.service_version,
                    agent_name=state.agent_name,
                    agent_version=state.agent_version,
                    dialects=transcript.dialects,
                    instrumentation_scopes=list(state.scopes)[:16],
                    resource_attributes=state.resource,
                ),
                trace_ids=list(state.trace_ids),
                started_at=started,
                ended_at=max(ended, started),
                system_instructions=transcript.system_instructions,
                turns=transcript.turns,
                close_reason=closed.reason,
                incomplete=bool(reasons),
                incomplete_reasons=list(dict.fromkeys(reasons)),
                truncated=state.head_emitted or closed.reason in CAPPED_REASONS,
                dropped_spans=state.dropped_spans,
                error_spans=state.error_spans,
                sampling=decision,
            ),
            extra="ignore",
        )
        for reason in session.incomplete_reasons:
            self.metrics.sessions_incomplete.labels(reason).inc()
        self.metrics.assembly_duration.observe(time.thread_time() - started_assembly)
        return session


class CollectorPipeline:
    def __init__(
        self,
        config: CollectorConfig,
        metrics: CollectorMetrics,
        next_stage: PendingStage,
        clock: Callable[[], float] = time.monotonic,
        wal: Durability | None = None,
        router: ObservationRouter | None = None,
        ledger: OffsetLedger | None = None,
    ) -> None:
        self.config = config
        self.metrics = metrics
        self.next_stage = next_stage
        self.wal = wal
        self.router = router
        self.ledger = ledger
        markers = config.decoders.redaction_markers
        self.span_decoders = build_span_decoders(config.decoders.dialects, markers)
        self.log_decoders = build_log_decoders(config.decoders.dialects, markers)
        self.reader = ContextReader(
            config.conversation_key,
            config.sessions,
            config.sampling,
            config.service_fallback,
        )
        self.sessionizer = Sessionizer(config.sessions, clock)
        self.sampler = Sampler(config.sampling)
        # prometheus_client's labels() locks and builds a key on every call; the label values
        # here are enum members, so each child is looked up once.
        self._closed_counter = functools.cache(metrics.sessions_closed.labels)
        self._sampled_counter = functools.cache(metrics.sessions_sampled.labels)
        self._event_sequence = 0
        self._clock = clock
        self._trace_keyed_warned_at: float | None = None
        self._trace_keyed_unreported = 0
        self.on_closed: Callable[[ClosedSession, list[Position]], None] | None = None
        """Hears of each closed session with its bus positions (the sessionizer's changelog)."""

    def overloaded(self) -> bool:
        if self.router is not None and self.router.overloaded():
            return True
        return self.next_stage.overloaded()

    def accept_spans(self, spans: list[SpanView], source: int = 0) -> int:
        """Buffer decoded spans (from write-ahead log frame `source`, if any); return how many a
        dialect decoder failed on (rejected)."""
        failed = 0
        read_context = self.reader.read
        decoders = self.span_decoders
        sessionizer = self.sessionizer
        sessionizer.source = source
        for index, span in enumerate(spans):
            sessionizer.source_index = index
            context = read_context(
                span.attributes,
                span.resource,
                span.scope_name,
                span.status_code,
                tuple([event.name for event in span.events]) if span.events else (),
                span.dropped_attributes,
            )
            try:
                observation = self._first_match(decoders, span)
            except Exception as exc:
                # A decoder bug on hostile content must cost one span, never the request.
                failed += 1
                log.warning("span decoder failed", extra={"error": type(exc).__name__})
                continue
            if observation is None and not (context.is_error or self.reader.has_identity(context)):
                continue
            self._add(span.trace_id, context, observation, span.start_ns)
        sessionizer.source = 0
        self._flush()
        return failed

    def accept_logs(self, records: list[LogView], source: int = 0) -> int:
        """Buffer decoded log records (from write-ahead log frame `source`, if any); return how
        many a decoder failed on (rejected)."""
        failed = 0
        sessionizer = self.sessionizer
        sessionizer.source = source
        for index, record in enumerate(records):
            sessionizer.source_index = index
            context = self.reader.read(
                record.attributes,
                record.resource,
                record.scope_name,
                0,
                (),
                record.dropped_attributes,
            )
            try:
                observation = self._first_match(self.log_decoders, record)
            except Exception as exc:
                failed += 1
                log.warning("log decoder failed", extra={"error": type(exc).__name__})
                continue
            if observation is None and not self.reader.has_identity(context):
                continue
            trace_id = record.trace_id or context.conversation_key
            if not trace_id:
                continue
            if observation is not None:
                self._event_sequence += 1
                observation.event_sequence = self._event_sequence
            self._add(trace_id, context, observation, record.time_ns)
        sessionizer.source = 0
        self._flush()
        return failed

    @staticmethod
    def _first_match(decoders: list, item: SpanView | LogView) -> Observation | None:
        for decoder in decoders:
            observation = decoder.decode(item)
            if observation is not None:
                return observation
        return None

    def _flush(self) -> None:
        if self.router is not None:
            self.router.flush()
        self._update_gauges()

    def _add(
        self, trace_id: str, context: Context, observation: Observation | None, time_ns: int
    ) -> None:
        if self.router is not None:
            self.router.add(trace_id, context, observation, time_ns)
            return
        self._sessionize(trace_id, context, observation, time_ns, None)

    def add_routed(self, item: RoutedObservation, held: Position) -> None:
        """The sessionizer role: one observation consumed from the bus, held at `held`."""
        self._sessionize(
            item.trace_id, item.context, item.observation, item.time_ns, held, item.arrival
        )
        self._update_gauges()

    def _sessionize(
        self,
        trace_id: str,
        context: Context,
        observation: Observation | None,
        time_ns: int,
        held: Position | None,
        arrival: int = 0,
    ) -> None:
        opened_before, redelivered_before = self.sessionizer.opened, self.sessionizer.redelivered
        closed = self.sessionizer.add(trace_id, context, observation, time_ns, held, arrival)
        if self.sessionizer.redelivered != redelivered_before:
            self.metrics.observations_redelivered.inc()
            if self.ledger is not None and held is not None:
                self.ledger.release([held])  # skipped: nothing holds it
        if self.sessionizer.opened != opened_before:
            self.metrics.sessions_opened.inc(self.sessionizer.opened - opened_before)
        for item in closed:
            self._emit(item)

    def sweep(self) -> None:
        for item in self.sessionizer.sweep():
            self._emit(item)
        if self.wal is not None:
            self._maintain_wal(self.wal)
        self._update_gauges()

    def _maintain_wal(self, wal: Durability) -> None:
        """Trim the log; past its high watermark, close the sessions holding its oldest segment,
        as many as the next stage has room for (a full handoff queue would drop them)."""
        for key in wal.maintain(self.sessionizer.open_sessions()):
            if self.next_stage.overloaded():
                break
            for item in self.sessionizer.close_keys((key,), CloseReason.EVICTED):
                wal.metrics.evicted.inc()
                self._emit(item)

    def close_keys(self, keys: Iterable[str], reason: CloseReason) -> None:
        """Close these open sessions now (the sessionizer role's ended conversations)."""
        for item in self.sessionizer.close_keys(keys, reason):
            self._emit(item)
        self._update_gauges()

    def close_all(self) -> None:
        for item in self.sessionizer.close_all():
            self._emit(item)
        self._update_gauges()

    def _emit(self, closed: ClosedSession) -> None:
        state = closed.state
        claim = None
        if self.wal is not None:  # the sessionizer role (bus positions) runs no log of its own
            claim = self.wal.claim(state)
            if claim is None:
                return  # rebuilt from the log, and all of it was on the bus before the restart
        if state.key_source == TRACE_KEY_SOURCE:
            self._trace_keyed(state.service)
        held, state.held = state.held, []
        if self.on_closed is not None:
            self.on_closed(closed, held)
        self._closed_counter(closed.reason.value).inc()
        decision = self.sampler.decide(
            state.conversation_key,
            SamplingSignals(
                error_spans=state.error_spans,
                tool_errors=state.tool_errors,
                forced_attribute=state.forced_attribute,
            ),
        )
        self._sampled_counter(decision.reason.value).inc()
        pending = PendingSession(closed, decision, claim, held, self.ledger)
        if decision.sampled:
            self.next_stage.offer(pending)
        else:
            pending.settle()  # nothing to publish: its log frames and observations are done with

    def _trace_keyed(self, service: str | None) -> None:
        """A trace that never named a conversation closed as a session of its own: count it
        as opened now (the sessionizer counts only keyed conversations), and warn, rate
        limited, since it usually means the chatbot sets no conversation id at all."""
        self.metrics.sessions_opened.inc()
        self.metrics.sessions_trace_keyed.inc()
        self._trace_keyed_unreported += 1
        now = self._clock()
        last = self._trace_keyed_warned_at
        if last is not None and now - last < TRACE_KEY_WARNING_SECONDS:
            return
        log.warning(
            "sessions keyed by trace id: no span named a conversation id, so every trace is "
            "a session of its own; set one of conversation_key.priority on the spans",
            extra={
                "reason": "no_conversation_key",
                "sessions": self._trace_keyed_unreported,
                "service": service or self.config.service_fallback,
                "looked_for": self.reader.key_attributes,
            },
        )
        self._trace_keyed_warned_at = now
        self._trace_keyed_unreported = 0

    def _update_gauges(self) -> None:
        if self.router is not None:
            return  # a routing collector buffers no session: the gauges are the sessionizer's
        self.metrics.sessions_open.set(self.sessionizer.open_count)
        self.metrics.buffered_bytes.set(self.sessionizer.held_bytes)

    async def run_sweeper(self) -> None:
        interval = self.config.sessions.sweep_interval_seconds
        while True:
            await asyncio.sleep(interval)
            try:
                self.sweep()
            except Exception:
                # Sessions must keep closing even if one of them trips a bug.
                log.exception("idle sweep failed", extra={"reason": "sweep_error"})
