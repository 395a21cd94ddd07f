"""Buffer observations per conversation and decide when a conversation is closed.

Spans of one conversation arrive across many batches, children before parents, and only some of
them name the conversation. A span without a key joins the conversation its trace was mapped to;
until its trace is mapped it waits in a conversation keyed by the trace id, which is merged into
the real one as soon as any span of that trace names it.

A session closes after an idle period, at an explicit end marker, or when it passes its turn or
byte cap. A span that arrives after close re-opens the conversation as a later revision of the
same session id (with the earlier content, while it is kept). Everything is bounded: open
sessions and buffered bytes evict the least recently active session, and every eviction is
reported to the caller as a closed session with reason `evicted`, never dropped silently.

Bookkeeping is O(1) amortised per span and per close: open sessions, closed ones kept for the
reopen window, closed keys and trace mappings are ordered maps whose bounds pop the oldest. Sizes
are measured (`tests/test_session_memory.py`): `max_buffered_bytes` bounds memory, not just text.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from turnwatch.collector.config import SessionConfig
from turnwatch.collector.records import (
    TRACE_MAPPING_SOURCE,
    Context,
    Observation,
    ObservationKind,
    first_values,
)
from turnwatch.collector.resent_history import HistoryTail, drop_resent_history
from turnwatch.collector.revision_clock import HandedOver, SessionRevisions, arrival_identity
from turnwatch.collector.session_keys import conversation_of_key, scoped_key
from turnwatch.collector.wal.sources import Sources, merged_sources, note_source

from turnwatch.schema import CloseReason

TRACE_KEY_SOURCE = "trace_id"
CAPPED = frozenset({CloseReason.TURN_CAP, CloseReason.BYTE_CAP, CloseReason.EVICTED})

# Memory of the sessionizer's own records, measured with tracemalloc: an open session with its
# maps and list, one more trace id, write-ahead log frame or arrival identity in a session, and
# an entry of the closed-key (and its revision) and trace-id maps (their strings included).
SESSION_OVERHEAD = 1_100
TRACE_OVERHEAD = 110
SOURCE_OVERHEAD = 150
ARRIVAL_OVERHEAD = 100
CLOSED_KEY_BYTES = 210
TRACE_KEY_BYTES = 260


@dataclass(slots=True)
class OpenSession:
    key: str
    key_source: str
    opened_at: float
    last_activity: float
    revision: int = 0
    """Given at close (revision_clock.py); a closed session is never changed again."""
    closed_at: float = 0.0
    service: str | None = None
    service_from_model_call: bool = False
    user_id: str | None = None
    service_version: str | None = None
    agent_name: str | None = None
    agent_version: str | None = None
    scopes: dict[str, None] = field(default_factory=dict)
    observations: list[Observation] = field(default_factory=list)
    trace_ids: dict[str, None] = field(default_factory=dict)
    tails: dict[str, HistoryTail] = field(default_factory=dict)
    first_ns: int = 0
    last_ns: int = 0
    size: int = SESSION_OVERHEAD
    model_calls: int = 0
    error_spans: int = 0
    tool_errors: int = 0
    dropped_spans: int = 0
    forced_attribute: str | None = None
    head_emitted: bool = False
    sources: Sources = field(default_factory=dict)
    """Write-ahead log frame -> [first, last] index of its items here (frames ascending)."""
    held: list[Any] = field(default_factory=list)
    """Where each observation came from on the bus (sessionizer role); empty otherwise."""
    resource: dict[str, str] = field(default_factory=dict)
    """The kept resource attributes (`Context.resource_attributes`), first value of each wins."""
    # Sessionizer role: the latest arrival stamp (its revision), observations held (a replay
    # skips), those that joined through their trace (a forward may bring again: changelog.py).
    last_arrival: int = 0
    arrivals: set[int] = field(default_factory=set)
    joined_by_trace: list[int] = field(default_factory=list)
    handed: HandedOver | None = None  # the revision another member published before this one

    @property
    def conversation_key(self) -> str:
        return conversation_of_key(self.key)

    @property
    def estimated_turns(self) -> int:
        # Content is parsed only at assembly; a model call adds about a user and a bot turn.
        return 2 * self.model_calls

    def continued(self, now: float) -> OpenSession:
        """The next revision: the content in new containers (the closed one may await assembly)."""
        return replace(
            self,
            opened_at=now,
            last_activity=now,
            revision=0,
            closed_at=0.0,
            scopes=dict(self.scopes),
            observations=list(self.observations),
            trace_ids=dict(self.trace_ids),
            tails={
                channel: HistoryTail(tail.observation, tail.history, tail.extra_bytes)
                for channel, tail in self.tails.items()
            },
            sources={},
            held=[],
            arrivals=set(self.arrivals),
            joined_by_trace=list(self.joined_by_trace),
        )


@dataclass(slots=True)
class ClosedSession:
    state: OpenSession
    reason: CloseReason


class Sessionizer:
    def __init__(
        self,
        config: SessionConfig,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self.config = config
        self.clock = clock
        self.revisions = SessionRevisions(config.max_remembered_sessions, wall_clock)
        # Open sessions are ordered by activity but not an LRU: they are bounded by count and by
        # bytes together, and evicting one closes it (the caller gets it), rather than forgets it.
        self._open: OrderedDict[str, OpenSession] = OrderedDict()
        # Closed sessions whose content is kept for the reopen window, oldest close first; bounded
        # by bytes (`max_reopen_bytes`) and by age, so an ordered map rather than the LRU.
        self._kept: OrderedDict[str, OpenSession] = OrderedDict()
        # Touched by every span, so a local OrderedDict rather than the shared LRU (same bound
        # and order): from this compiled module, the LRU's Python methods cost about 12% more CPU
        # per span in `add` (compiled A/B, 30 alternating runs).
        self._trace_keys: OrderedDict[str, str] = OrderedDict()
        self._max_trace_keys = 4 * config.max_open_sessions
        self.open_bytes = 0
        self.kept_bytes = 0
        # Conversations opened under their own key, not buckets keyed by a trace id: most merge
        # into a keyed one once a span names it, the caller counts the rest as they close.
        self.opened = 0
        self.source = 0  # the write-ahead log frame of the items being added (0: none)
        self.source_index = 0  # the index of the item being added within that frame
        self.redelivered = 0  # observations skipped: this member already had them
        self.idle_held = False  # delivery stopped (a partition rebalance): no idle closes

    @property
    def open_count(self) -> int:
        return len(self._open)

    @property
    def buffered_bytes(self) -> int:
        """Memory held by session content, open and kept: what `max_buffered_bytes` bounds."""
        return self.open_bytes + self.kept_bytes

    @property
    def held_bytes(self) -> int:
        """Everything the sessionizer holds: content and its key maps (bounded by entry counts)."""
        return (
            self.buffered_bytes
            + len(self.revisions) * CLOSED_KEY_BYTES
            + len(self._trace_keys) * TRACE_KEY_BYTES
        )

    def add(
        self,
        trace_id: str,
        context: Context,
        observation: Observation | None,
        time_ns: int,
        held: Any = None,
        arrival: int = 0,
    ) -> tuple[ClosedSession, ...]:
        """Buffer one span's or log record's facts; return sessions this closed."""
        key, source = self._resolve_key(trace_id, context)
        identity = arrival_identity(arrival, trace_id, time_ns) if arrival else 0
        holding = (self._open.get(key) or self._kept.get(key)) if identity else None
        window = self.config.reopen_window_seconds
        if identity and (
            identity in holding.arrivals
            or (holding.handed is not None and holding.handed.forwarded_again(identity, held))
            if holding is not None
            else self.revisions.published(key, arrival, identity, held, window)
        ):
            self.redelivered += 1
            return ()
        now = self.clock()
        session = self._open.get(key)
        if session is None:
            session = self._reopen(key, source, now)
            self._open[key] = session
            self.open_bytes += session.size
            if source != TRACE_KEY_SOURCE:
                self.opened += 1
        else:
            self._open.move_to_end(key)
        session.last_activity = now
        if held is not None:
            session.held.append(held)
        if identity:
            session.last_arrival = max(session.last_arrival, arrival)
            session.arrivals.add(identity)
            if context.key_source == TRACE_MAPPING_SOURCE:
                session.joined_by_trace.append(identity)
        self.open_bytes += self._absorb(session, trace_id, context, observation, time_ns, identity)
        closed: tuple[ClosedSession, ...] = ()
        if context.is_end_marker:
            closed = (self._close(key, CloseReason.END_MARKER),)
        elif session.estimated_turns > self.config.max_turns:
            closed = (self._close(key, CloseReason.TURN_CAP),)
        elif session.size > self.config.max_session_bytes:
            closed = (self._close(key, CloseReason.BYTE_CAP),)
        return closed + tuple(self._enforce_bounds())

    def sweep(self) -> list[ClosedSession]:
        """Close sessions idle for longer than the idle timeout."""
        deadline = self.clock() - self.config.idle_timeout_seconds
        closed = []
        while self._open and not self.idle_held:
            key, session = next(iter(self._open.items()))
            if session.last_activity > deadline:
                break
            closed.append(self._close(key, CloseReason.IDLE))
        self._forget_expired()
        return closed

    def hold_idle(self, held: bool) -> None:
        """Stop the idle clock (a rebalance under way), or restart it: every open session then
        gets a whole idle timeout from now (README: the distributed layout, partition moves)."""
        self.idle_held = held
        for session in () if held else self._open.values():
            session.last_activity = max(session.last_activity, self.clock())

    def close_all(self) -> list[ClosedSession]:
        return [self._close(key, CloseReason.SHUTDOWN) for key in list(self._open)]

    def close_keys(self, keys: Iterable[str], reason: CloseReason) -> list[ClosedSession]:
        """Close the named open sessions now (the write-ahead log frees its oldest segment)."""
        return [self._close(key, reason) for key in keys if key in self._open]

    def open_sessions(self) -> Iterable[OpenSession]:
        return self._open.values()

    def discard(self, drop: Callable[[OpenSession], bool]) -> int:
        """Forget open sessions without closing them (replayed to their new owner); how many."""
        dropped = [key for key, session in self._open.items() if drop(session)]
        for key in dropped:
            self.open_bytes -= self._open.pop(key).size
        return len(dropped)

    def _resolve_key(self, trace_id: str, context: Context) -> tuple[str, str]:
        if context.conversation_key:
            key = scoped_key(context.service, context.conversation_key)
            mapped = self._trace_keys.get(trace_id)
            source = context.key_source or "attribute"
            if mapped != key:
                self._remember_trace(trace_id, key)
                if mapped == trace_id:
                    self._merge_trace_session(trace_id, key, source)
            return key, source
        mapped = self._trace_keys.get(trace_id)
        if mapped is not None:
            self._trace_keys.move_to_end(trace_id)
            session = self._open.get(mapped)
            if session is not None:
                return mapped, session.key_source
            return mapped, TRACE_KEY_SOURCE if mapped == trace_id else TRACE_MAPPING_SOURCE
        self._remember_trace(trace_id, trace_id)
        return trace_id, TRACE_KEY_SOURCE

    def _remember_trace(self, trace_id: str, key: str) -> None:
        self._trace_keys[trace_id] = key
        self._trace_keys.move_to_end(trace_id)
        if len(self._trace_keys) > self._max_trace_keys:
            self._trace_keys.popitem(last=False)

    def _merge_trace_session(self, trace_id: str, key: str, source: str) -> None:
        pending = self._open.pop(trace_id, None)
        if pending is None:
            return
        self.open_bytes -= pending.size
        target = self._open.get(key)
        if target is None:
            # Reopen through the kept content, so a conversation that already closed gets its
            # next revision with the earlier content (or flagged truncated).
            target = self._reopen(key, source, self.clock())
            target.opened_at = min(target.opened_at, pending.opened_at)
            self._open[key] = target
            self.open_bytes += target.size
            self.opened += 1
        added = pending.size - SESSION_OVERHEAD
        target.observations.extend(pending.observations)
        target.held.extend(pending.held)
        target.trace_ids.update(pending.trace_ids)
        target.scopes.update(pending.scopes)
        for channel, tail in pending.tails.items():
            if channel in target.tails:
                added -= tail.extra_bytes
            else:
                target.tails[channel] = tail
        target.size += added
        self.open_bytes += added
        if pending.sources:
            target.sources = merged_sources(target.sources, pending.sources)
        target.model_calls += pending.model_calls
        target.error_spans += pending.error_spans
        target.tool_errors += pending.tool_errors
        target.dropped_spans += pending.dropped_spans
        if target.service is None or (
            pending.service_from_model_call and not target.service_from_model_call
        ):
            target.service = pending.service
            target.service_from_model_call = pending.service_from_model_call
        target.user_id = target.user_id or pending.user_id
        target.service_version = target.service_version or pending.service_version
        target.resource = first_values(target.resource, pending.resource)
        target.agent_name = target.agent_name or pending.agent_name
        target.agent_version = target.agent_version or pending.agent_version
        target.forced_attribute = target.forced_attribute or pending.forced_attribute
        target.head_emitted = target.head_emitted or pending.head_emitted
        target.last_arrival = max(target.last_arrival, pending.last_arrival)
        target.arrivals |= pending.arrivals
        target.joined_by_trace.extend(pending.joined_by_trace)
        target.first_ns = min(filter(None, (target.first_ns, pending.first_ns)), default=0)
        target.last_ns = max(target.last_ns, pending.last_ns)

    def _reopen(self, key: str, source: str, now: float) -> OpenSession:
        kept = self._kept.pop(key, None)
        if kept is not None:
            self.kept_bytes -= kept.size
            if now - kept.closed_at <= self.config.reopen_window_seconds:
                return kept.continued(now)
        closed_before = kept is not None or key in self.revisions
        session = OpenSession(key, source, now, now, head_emitted=closed_before)
        session.handed = self.revisions.handed_over(key)
        if (handed := session.handed) is not None:  # forwarded ones, for the next changelog too
            session.joined_by_trace.extend(handed.joined_by_trace)
            session.size += ARRIVAL_OVERHEAD * len(handed.joined_by_trace)
        return session

    def _absorb(
        self,
        session: OpenSession,
        trace_id: str,
        context: Context,
        observation: Observation | None,
        time_ns: int,
        identity: int = 0,
    ) -> int:
        """Add one span's facts to the session; return the bytes this added."""
        added = ARRIVAL_OVERHEAD if identity else 0
        if trace_id not in session.trace_ids:
            session.trace_ids[trace_id] = None
            added += TRACE_OVERHEAD
        if self.source and note_source(session.sources, self.source, self.source_index):
            added += SOURCE_OVERHEAD
        if context.scope_name:
            session.scopes[context.scope_name] = None
        is_model_call = (
            observation is not None and observation.kind is not ObservationKind.TOOL_EXECUTION
        )
        if session.service is None or (is_model_call and not session.service_from_model_call):
            session.service = context.service
            session.service_from_model_call = is_model_call
        session.user_id = session.user_id or context.user_id
        session.service_version = session.service_version or context.service_version
        session.resource = first_values(session.resource, context.resource_attributes)
        session.agent_name = session.agent_name or context.agent_name
        session.agent_version = session.agent_version or context.agent_version
        session.forced_attribute = session.forced_attribute or context.force_attribute
        session.error_spans += context.is_error
        session.dropped_spans += context.dropped_attributes > 0
        if time_ns > 0:
            session.first_ns = min(session.first_ns, time_ns) if session.first_ns else time_ns
            session.last_ns = max(session.last_ns, time_ns)
        if observation is not None:
            if observation.content is not None and observation.content.channel:
                added += drop_resent_history(session.tails, observation)
            session.observations.append(observation)
            added += observation.size_bytes
            if observation.kind is ObservationKind.LLM_CALL:
                session.model_calls += 1
            elif observation.kind is ObservationKind.MESSAGE_EVENT:
                session.model_calls += len(observation.outputs)
            elif observation.tool is not None and observation.tool.error is not None:
                session.tool_errors += 1
        session.size += added
        return added

    def _close(self, key: str, reason: CloseReason) -> ClosedSession:
        session = self._open.pop(key)
        self.open_bytes -= session.size
        if self.revisions.continues_handed_over(key, session.held):
            session.head_emitted = True
        session.revision = self.revisions.number(key, session.last_arrival, session.held)
        session.closed_at = self.clock()
        if reason not in CAPPED and self.config.reopen_window_seconds > 0:
            earlier = self._kept.pop(key, None)
            if earlier is not None:
                self.kept_bytes -= earlier.size
            self._kept[key] = session
            self.kept_bytes += session.size
            self._bound_kept()
        return ClosedSession(state=session, reason=reason)

    def _bound_kept(self) -> None:
        """Kept content yields first: to its own budget, then to open sessions."""
        while self._kept and (
            self.kept_bytes > self.config.max_reopen_bytes
            or self.open_bytes + self.kept_bytes > self.config.max_buffered_bytes
        ):
            _, dropped = self._kept.popitem(last=False)
            self.kept_bytes -= dropped.size

    def _forget_expired(self) -> None:
        deadline = self.clock() - self.config.reopen_window_seconds
        while self._kept:
            session = next(iter(self._kept.values()))
            if session.closed_at > deadline:
                break
            self._kept.popitem(last=False)
            self.kept_bytes -= session.size

    def _enforce_bounds(self) -> list[ClosedSession]:
        self._bound_kept()
        evicted = []
        while self._open and (
            len(self._open) > self.config.max_open_sessions
            or self.open_bytes > self.config.max_buffered_bytes
        ):
            evicted.append(self._close(next(iter(self._open)), CloseReason.EVICTED))
        return evicted
