"""Buffer observations per conversation and decide when a conversation is closed.

Spans of one conversation arrive across many batches, children before parents, and only some of
them name the conversation. A span without a key joins the conversation its trace was mapped to;
until its trace is mapped it waits in a conversation keyed by the trace id, which is merged into
the real one as soon as any span of that trace names it.

A session closes after an idle period, at an explicit end marker, or when it passes its turn or
byte cap. A span that arrives after close re-opens the conversation as the next revision of the
same session id (with the earlier content, while it is remembered). Everything is bounded: open
sessions and buffered bytes evict the least recently active session, and every eviction is
reported to the caller as a closed session with reason `evicted`, never dropped silently.
"""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from turnwatch.collector.config import SessionConfig
from turnwatch.collector.records import Context, Observation, ObservationKind

from turnwatch.lru import LRU
from turnwatch.schema import CloseReason

TRACE_KEY_SOURCE = "trace_id"


def session_id_for(conversation_key: str) -> str:
    return hashlib.blake2b(conversation_key.encode(), digest_size=16).hexdigest()


@dataclass(slots=True)
class OpenSession:
    key: str
    key_source: str
    revision: int
    opened_at: float
    last_activity: float
    service: str | None = None
    service_from_model_call: bool = False
    user_id: str | None = None
    service_version: str | None = None
    agent_name: str | None = None
    agent_version: str | None = None
    scopes: dict[str, None] = field(default_factory=dict)
    observations: list[Observation] = field(default_factory=list)
    trace_ids: dict[str, None] = field(default_factory=dict)
    first_ns: int = 0
    last_ns: int = 0
    size: int = 0
    model_calls: int = 0
    error_spans: int = 0
    tool_errors: int = 0
    dropped_spans: int = 0
    forced_attribute: str | None = None
    head_emitted: bool = False
    sources: dict[int, list[int]] = field(default_factory=dict)
    """With the write-ahead log on: log frame -> [first, last] index of the items taken from it
    (frames in ascending order). The pipeline takes them when the session closes."""

    @property
    def session_id(self) -> str:
        return session_id_for(self.key)

    @property
    def estimated_turns(self) -> int:
        # Content is parsed only at assembly; a model call adds about a user and a bot turn.
        return 2 * self.model_calls


@dataclass(slots=True)
class ClosedSession:
    state: OpenSession
    reason: CloseReason


@dataclass(slots=True)
class _Remembered:
    revision: int
    closed_at: float
    state: OpenSession | None


class Sessionizer:
    def __init__(self, config: SessionConfig, clock: Callable[[], float] = time.monotonic) -> None:
        self.config = config
        self.clock = clock
        # Open sessions are ordered by activity but not an LRU: they are bounded by count and by
        # bytes together, and evicting one closes it (the caller gets it), rather than forgets it.
        self._open: OrderedDict[str, OpenSession] = OrderedDict()
        self._recent: LRU[str, _Remembered] = LRU(config.max_remembered_sessions, self._forgot)
        self._recent_bytes = 0
        # Touched by every span, so a local OrderedDict rather than the shared LRU: from this
        # compiled module, going through the LRU's Python methods measured about 12% more CPU per
        # span in `add` (compiled A/B, 30 alternating runs). Same bound and order as the LRU.
        self._trace_keys: OrderedDict[str, str] = OrderedDict()
        self._max_trace_keys = 4 * config.max_open_sessions
        self.buffered_bytes = 0
        self.opened = 0
        self.source = 0
        """The write-ahead log frame the items being added come from (0: none)."""
        self.source_index = 0
        """The index of the item being added within that frame."""

    @property
    def open_count(self) -> int:
        return len(self._open)

    def add(
        self, trace_id: str, context: Context, observation: Observation | None, time_ns: int
    ) -> tuple[ClosedSession, ...]:
        """Buffer one span's or log record's facts; return sessions this closed."""
        key, source = self._resolve_key(trace_id, context)
        now = self.clock()
        session = self._open.get(key)
        if session is None:
            session = self._reopen(key, source, now)
            self._open[key] = session
            self.opened += 1
        else:
            self._open.move_to_end(key)
        session.last_activity = now
        self._absorb(session, trace_id, context, observation, time_ns)
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
        while self._open:
            key, session = next(iter(self._open.items()))
            if session.last_activity > deadline:
                break
            closed.append(self._close(key, CloseReason.IDLE))
        self._forget_expired()
        return closed

    def close_all(self) -> list[ClosedSession]:
        return [self._close(key, CloseReason.SHUTDOWN) for key in list(self._open)]

    def close_keys(self, keys: Iterable[str], reason: CloseReason) -> list[ClosedSession]:
        """Close the named open sessions now (the write-ahead log frees its oldest segment)."""
        return [self._close(key, reason) for key in keys if key in self._open]

    def open_sessions(self) -> Iterable[OpenSession]:
        return self._open.values()

    def _resolve_key(self, trace_id: str, context: Context) -> tuple[str, str]:
        if context.conversation_key:
            key = context.conversation_key
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
            return mapped, TRACE_KEY_SOURCE if mapped == trace_id else "trace_mapping"
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
        self.buffered_bytes -= pending.size
        target = self._open.get(key)
        if target is None:
            # Reopen through the remembered state, so a conversation that already closed gets
            # its next revision with the earlier content (or flagged truncated), not revision 1.
            target = self._reopen(key, source, self.clock())
            target.opened_at = min(target.opened_at, pending.opened_at)
            self._open[key] = target
        target.observations.extend(pending.observations)
        target.trace_ids.update(pending.trace_ids)
        target.scopes.update(pending.scopes)
        target.size += pending.size
        self.buffered_bytes += pending.size
        if pending.sources:
            target.sources = _merged_sources(target.sources, pending.sources)
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
        target.agent_name = target.agent_name or pending.agent_name
        target.agent_version = target.agent_version or pending.agent_version
        target.forced_attribute = target.forced_attribute or pending.forced_attribute
        target.head_emitted = target.head_emitted or pending.head_emitted
        target.first_ns = min(filter(None, (target.first_ns, pending.first_ns)), default=0)
        target.last_ns = max(target.last_ns, pending.last_ns)

    def _reopen(self, key: str, source: str, now: float) -> OpenSession:
        remembered = self._recent.pop(key)
        if remembered is None:
            return OpenSession(
                key=key, key_source=source, revision=1, opened_at=now, last_activity=now
            )
        previous = remembered.state
        within_window = now - remembered.closed_at <= self.config.reopen_window_seconds
        if previous is not None:
            self._recent_bytes -= previous.size
        if previous is not None and within_window:
            previous.revision = remembered.revision + 1
            previous.opened_at = now
            self.buffered_bytes += previous.size
            return previous
        return OpenSession(
            key=key,
            key_source=source,
            revision=remembered.revision + 1,
            opened_at=now,
            last_activity=now,
            head_emitted=True,
        )

    def _absorb(
        self,
        session: OpenSession,
        trace_id: str,
        context: Context,
        observation: Observation | None,
        time_ns: int,
    ) -> None:
        session.trace_ids[trace_id] = None
        if self.source:
            held = session.sources.get(self.source)
            if held is None:
                session.sources[self.source] = [self.source_index, self.source_index]
            else:
                held[1] = self.source_index
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
        session.agent_name = session.agent_name or context.agent_name
        session.agent_version = session.agent_version or context.agent_version
        session.forced_attribute = session.forced_attribute or context.force_attribute
        session.error_spans += context.is_error
        session.dropped_spans += context.dropped_attributes > 0
        if time_ns > 0:
            session.first_ns = min(session.first_ns, time_ns) if session.first_ns else time_ns
            session.last_ns = max(session.last_ns, time_ns)
        if observation is None:
            return
        session.observations.append(observation)
        added = observation.size_bytes + 128
        session.size += added
        self.buffered_bytes += added
        if observation.kind is ObservationKind.LLM_CALL:
            session.model_calls += 1
        elif observation.kind is ObservationKind.MESSAGE_EVENT:
            session.model_calls += len(observation.outputs)
        elif observation.tool is not None and observation.tool.error is not None:
            session.tool_errors += 1

    def _close(self, key: str, reason: CloseReason) -> ClosedSession:
        session = self._open.pop(key)
        self.buffered_bytes -= session.size
        capped = reason in (CloseReason.TURN_CAP, CloseReason.BYTE_CAP, CloseReason.EVICTED)
        keep_content = not capped and self.config.reopen_window_seconds > 0
        if keep_content:
            self._recent_bytes += session.size
        self._recent.put(
            key,
            _Remembered(
                revision=session.revision,
                closed_at=self.clock(),
                state=session if keep_content else None,
            ),
        )
        self._bound_recent_content()
        return ClosedSession(state=session, reason=reason)

    def _bound_recent_content(self) -> None:
        content_budget = self.config.max_buffered_bytes // 2
        for remembered in self._recent.values():
            if self._recent_bytes <= content_budget:
                break
            if remembered.state is not None:
                self._recent_bytes -= remembered.state.size
                remembered.state = None

    def _forgot(self, key: str, remembered: _Remembered) -> None:
        if remembered.state is not None:
            self._recent_bytes -= remembered.state.size

    def _forget_expired(self) -> None:
        deadline = self.clock() - self.config.reopen_window_seconds
        for remembered in self._recent.values():
            if remembered.closed_at > deadline:
                break
            if remembered.state is not None:
                self._recent_bytes -= remembered.state.size
                remembered.state = None

    def _enforce_bounds(self) -> list[ClosedSession]:
        evicted = []
        while self._open and (
            len(self._open) > self.config.max_open_sessions
            or self.buffered_bytes > self.config.max_buffered_bytes
        ):
            evicted.append(self._close(next(iter(self._open)), CloseReason.EVICTED))
        return evicted


def _merged_sources(
    first: dict[int, list[int]], second: dict[int, list[int]]
) -> dict[int, list[int]]:
    """Both sessions' frames in ascending order; a frame both took items from spans both ranges."""
    merged = {seq: list(held) for seq, held in first.items()}
    for seq, (start, end) in second.items():
        held = merged.get(seq)
        merged[seq] = [start, end] if held is None else [min(held[0], start), max(held[1], end)]
    return dict(sorted(merged.items()))
