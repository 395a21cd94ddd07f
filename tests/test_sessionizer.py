"""Sessionizer: when conversations close, how they are keyed, re-opened and kept bounded.

Spans go through `CollectorPipeline.accept_spans` as decoded `SpanView`s, so what is asserted is
the `Session` record the next stage receives. Time is a fake clock (a plain callable) swapped into
the pipeline's sessionizer; nothing sleeps.
"""

from __future__ import annotations

import json
from itertools import count

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry
from turnwatch.collector.metrics import CollectorMetrics
from turnwatch.collector.records import (
    STATUS_ERROR,
    Context,
    Observation,
    ObservationKind,
    SpanEvent,
    SpanView,
)
from turnwatch.collector.sessionizer import Sessionizer

from tests.stages import assembling_pipeline
from turnwatch.app.settings import Settings, load_settings
from turnwatch.schema import CloseReason, Role, Session

IDLE = 60.0
WINDOW = 600.0
_span_ids = count(1)


class FakeClock:
    """Monotonic seconds that only move when a test says so."""

    def __init__(self, start: float = 10_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class Harness:
    """A collector pipeline with a fake clock and a private metrics registry."""

    def __init__(self, **overrides: object) -> None:
        values: dict[str, object] = {
            "sessions.idle_timeout_seconds": IDLE,
            "sessions.reopen_window_seconds": WINDOW,
        }
        values.update(overrides)
        self.settings: Settings = load_settings(None, values)
        self.registry = CollectorRegistry()
        self.clock = FakeClock()
        self.pipeline, self.built = assembling_pipeline(
            self.settings.collector, CollectorMetrics(self.registry), clock=self.clock
        )

    def send(self, *spans: SpanView) -> None:
        assert self.pipeline.accept_spans(list(spans)) == 0

    def sweep_after(self, seconds: float) -> list[Session]:
        self.clock.advance(seconds)
        self.pipeline.sweep()
        return self.emitted()

    def emitted(self) -> list[Session]:
        return self.built.take()

    def closed_total(self, reason: str) -> float:
        value = self.registry.get_sample_value(
            "turnwatch_sessions_closed_total", {"reason": reason}
        )
        return value or 0.0

    @property
    def open_count(self) -> int:
        return self.pipeline.sessionizer.open_count


def _text(role: str, content: str) -> dict:
    return {"role": role, "parts": [{"type": "text", "content": content}]}


def chat_span(
    trace_id: str,
    history: list[dict],
    answer: str,
    *,
    attributes: dict | None = None,
    events: list[SpanEvent] | None = None,
    status_code: int = 0,
    start_ns: int = 1_700_000_000_000_000_000,
) -> SpanView:
    """One OTel GenAI v1.37 chat span: the history sent and the assistant's answer."""
    return SpanView(
        trace_id=trace_id,
        span_id=f"{next(_span_ids):016x}",
        parent_span_id="",
        name="chat gpt-4o-mini",
        kind=3,
        start_ns=start_ns,
        end_ns=start_ns + 1_000_000,
        attributes={
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": "gpt-4o-mini",
            "gen_ai.input.messages": json.dumps(history),
            "gen_ai.output.messages": json.dumps([_text("assistant", answer)]),
            **(attributes or {}),
        },
        events=events or [],
        status_code=status_code,
        resource={"service.name": "support-bot"},
        scope_name="acme.support",
    )


def marker_span(trace_id: str, attributes: dict, events: list[SpanEvent] | None = None) -> SpanView:
    """A span without content that only names, flags or ends a conversation (e.g. a root span)."""
    return SpanView(
        trace_id=trace_id,
        span_id=f"{next(_span_ids):016x}",
        parent_span_id="",
        name="POST /chat",
        kind=2,
        start_ns=1_700_000_000_000_000_000,
        end_ns=1_700_000_000_500_000_000,
        attributes=attributes,
        events=events or [],
        status_code=0,
        resource={"service.name": "support-bot"},
        scope_name="acme.web",
    )


def exchange(conversation: str, trace_id: str, number: int, **kwargs) -> SpanView:
    """Turn `number` of a delta-style conversation: only the new user message is sent."""
    return chat_span(
        trace_id,
        [_text("user", f"question {number}")],
        f"answer {number}",
        attributes={"session.id": conversation, **kwargs.pop("attributes", {})},
        **kwargs,
    )


def texts(session: Session) -> list[str | None]:
    return [turn.text for turn in session.turns]


# --- closing --------------------------------------------------------------------------------


def test_while_the_idle_clock_is_held_nothing_closes_and_restarting_gives_a_whole_timeout():
    """The sessionizer role holds it through a partition rebalance (intake.py)."""
    harness = Harness()
    harness.send(exchange("conv-early", "t1", 1))
    harness.clock.advance(IDLE - 2)
    harness.send(exchange("conv-late", "t2", 1))
    harness.pipeline.sessionizer.hold_idle(True)
    assert harness.sweep_after(3 * IDLE) == []
    harness.pipeline.sessionizer.hold_idle(False)
    assert harness.sweep_after(IDLE - 1) == [] and harness.open_count == 2
    closed = harness.sweep_after(1)
    assert [s.conversation_key for s in closed] == ["conv-early", "conv-late"]
    assert harness.closed_total("idle") == 2


def test_idle_session_closes_after_the_timeout_and_not_before() -> None:
    harness = Harness()
    harness.send(exchange("conv-idle", "t1", 1))
    harness.clock.advance(IDLE - 1)
    harness.send(exchange("conv-idle", "t2", 2))

    # Activity restarts the idle timer: one second short of the timeout nothing closes.
    assert harness.sweep_after(IDLE - 1) == []
    assert harness.open_count == 1

    [session] = harness.sweep_after(1)
    assert session.close_reason is CloseReason.IDLE
    assert session.conversation_key == "conv-idle"
    assert texts(session) == ["question 1", "answer 1", "question 2", "answer 2"]
    assert session.trace_ids == ["t1", "t2"]
    assert not session.truncated
    assert harness.open_count == 0
    assert harness.closed_total("idle") == 1


def test_end_marker_attribute_closes_at_once() -> None:
    harness = Harness()
    harness.send(exchange("conv-end", "t1", 1))
    harness.send(marker_span("t2", {"session.id": "conv-end", "turnwatch.session.end": "true"}))

    [session] = harness.emitted()
    assert session.close_reason is CloseReason.END_MARKER
    assert texts(session) == ["question 1", "answer 1"]
    assert harness.open_count == 0
    assert harness.closed_total("end_marker") == 1
    assert harness.registry.get_sample_value("turnwatch_session_assembly_seconds_count") == 1
    assert harness.registry.get_sample_value("turnwatch_session_assembly_seconds_sum") > 0


def test_session_end_event_closes_at_once_even_on_an_unnamed_span_of_the_trace() -> None:
    harness = Harness()
    harness.send(exchange("conv-event", "t1", 1))
    # No conversation attribute: the span belongs to the conversation through its trace.
    harness.send(marker_span("t1", {}, events=[SpanEvent("session.end", 0, {})]))

    [session] = harness.emitted()
    assert session.close_reason is CloseReason.END_MARKER
    assert session.conversation_key == "conv-event"
    assert harness.open_count == 0


def test_a_span_without_end_marker_does_not_close() -> None:
    harness = Harness()
    harness.send(exchange("conv-open", "t1", 1))
    harness.send(marker_span("t1", {"turnwatch.session.end": "false"}))
    assert harness.emitted() == []
    assert harness.open_count == 1


def test_turn_cap_closes_and_the_session_is_marked_truncated() -> None:
    harness = Harness(**{"sessions.max_turns": 4})
    harness.send(exchange("conv-long", "t1", 1), exchange("conv-long", "t2", 2))
    assert harness.emitted() == [], "four turns is at the cap, not past it"

    harness.send(exchange("conv-long", "t3", 3))
    [session] = harness.emitted()
    assert session.close_reason is CloseReason.TURN_CAP
    assert session.truncated
    assert harness.closed_total("turn_cap") == 1

    # The rest of the conversation becomes a further revision, still flagged truncated.
    harness.send(exchange("conv-long", "t4", 4))
    [rest] = harness.sweep_after(IDLE)
    assert rest.session_id == session.session_id
    assert rest.revision > session.revision and rest.truncated
    assert texts(rest) == ["question 4", "answer 4"]


def test_byte_cap_closes_and_the_session_is_marked_truncated() -> None:
    # Sizes count what the buffered objects occupy: one of these spans takes about 3.1 KB.
    harness = Harness(**{"sessions.max_session_bytes": 5_000})
    big = "x" * 1_000
    harness.send(chat_span("t1", [_text("user", big)], "ok", attributes={"session.id": "c"}))
    assert harness.emitted() == []

    harness.send(chat_span("t2", [_text("user", big)], big, attributes={"session.id": "c"}))
    [session] = harness.emitted()
    assert session.close_reason is CloseReason.BYTE_CAP
    assert session.truncated
    assert harness.closed_total("byte_cap") == 1
    assert harness.pipeline.sessionizer.buffered_bytes == 0


# --- bounds and eviction --------------------------------------------------------------------


def test_open_session_cap_evicts_least_recently_active_first_and_counts_it() -> None:
    harness = Harness(**{"sessions.max_open_sessions": 3})
    for name in ("a", "b", "c"):
        harness.send(exchange(name, f"trace-{name}", 1))
        harness.clock.advance(1)
    harness.send(exchange("a", "trace-a2", 2))  # a is now the most recently active
    assert harness.emitted() == []

    harness.send(exchange("d", "trace-d", 1))
    harness.send(exchange("e", "trace-e", 1))
    evicted = harness.emitted()
    assert [s.conversation_key for s in evicted] == ["b", "c"]
    assert all(s.close_reason is CloseReason.EVICTED and s.truncated for s in evicted)
    assert harness.closed_total("evicted") == 2
    assert harness.open_count == 3

    remaining = {s.conversation_key for s in harness.sweep_after(IDLE)}
    assert remaining == {"a", "d", "e"}


def test_buffered_bytes_cap_evicts_least_recently_active_first_and_counts_it() -> None:
    # Each of these sessions occupies about 3 KB.
    harness = Harness(**{"sessions.max_buffered_bytes": 10_000})
    filler = "y" * 900
    for name in ("a", "b", "c"):
        harness.send(
            chat_span(f"t-{name}", [_text("user", filler)], "ok", attributes={"session.id": name})
        )
    assert harness.emitted() == []
    assert harness.pipeline.sessionizer.buffered_bytes <= 10_000

    harness.send(chat_span("t-d", [_text("user", filler)], "ok", attributes={"session.id": "d"}))
    [evicted] = harness.emitted()
    assert evicted.conversation_key == "a"
    assert evicted.close_reason is CloseReason.EVICTED and evicted.truncated
    assert harness.closed_total("evicted") == 1
    assert harness.pipeline.sessionizer.buffered_bytes <= 10_000
    sessionizer = harness.pipeline.sessionizer
    held = harness.registry.get_sample_value("turnwatch_session_buffer_bytes")
    assert held == sessionizer.held_bytes > sessionizer.buffered_bytes  # the key maps too


def _context(key: str | None) -> Context:
    return Context(
        service="svc",
        conversation_key=key,
        key_source="session.id" if key else None,
        user_id=None,
        is_error=False,
        is_end_marker=False,
        force_attribute=None,
        service_version=None,
        agent_name=None,
        agent_version=None,
        scope_name="scope",
        dropped_attributes=0,
    )


def _tool_observation(trace_id: str) -> Observation:
    return Observation(
        kind=ObservationKind.TOOL_EXECUTION,
        dialect="genai",
        trace_id=trace_id,
        span_id="01",
        start_ns=1,
        end_ns=2,
        size_bytes=200,
    )


@pytest.mark.slow  # a long run
def test_memory_stays_bounded_under_100k_distinct_conversations() -> None:
    settings = load_settings(
        None,
        {
            "sessions.max_open_sessions": 500,
            "sessions.max_remembered_sessions": 1_000,
            "sessions.max_buffered_bytes": 40_000,
        },
    )
    clock = FakeClock()
    sessionizer = Sessionizer(settings.sessions, clock=clock)
    closed = evicted = 0
    peak_open = peak_bytes = 0
    for number in range(100_000):
        key = f"conv-{number}"
        # Half the spans name their conversation, half only carry a trace id.
        context = _context(key if number % 2 else None)
        result = sessionizer.add(f"trace-{number}", context, _tool_observation(key), 0)
        closed += len(result)
        evicted += sum(item.reason is CloseReason.EVICTED for item in result)
        peak_open = max(peak_open, sessionizer.open_count)
        peak_bytes = max(peak_bytes, sessionizer.buffered_bytes)
        if number % 10_000 == 0:
            clock.advance(1)
            closed += len(sessionizer.sweep())

    assert peak_open <= 500
    assert peak_bytes <= 40_000
    assert len(sessionizer.revisions) <= 1_000
    assert len(sessionizer._trace_keys) <= 4 * 500
    # Nothing vanished: every conversation is either still open or was handed back closed.
    assert closed + sessionizer.open_count == 100_000
    assert evicted > 0


# --- late spans and revisions ---------------------------------------------------------------


def test_late_span_within_the_window_reemits_the_whole_conversation_as_a_later_revision() -> None:
    harness = Harness()
    harness.send(exchange("conv-late", "t1", 1), exchange("conv-late", "t2", 2))
    [first] = harness.sweep_after(IDLE)

    harness.clock.advance(WINDOW / 2)
    harness.send(exchange("conv-late", "t3", 3))
    [second] = harness.sweep_after(IDLE)

    assert second.session_id == first.session_id
    assert second.revision > first.revision
    assert texts(second) == [*texts(first), "question 3", "answer 3"]
    assert not second.truncated
    assert second.trace_ids == ["t1", "t2", "t3"]


def test_late_span_after_the_window_is_a_truncated_revision_with_only_new_content() -> None:
    harness = Harness()
    harness.send(exchange("conv-later", "t1", 1))
    [first] = harness.sweep_after(IDLE)

    harness.clock.advance(WINDOW + 1)
    harness.send(exchange("conv-later", "t2", 2))
    [second] = harness.sweep_after(IDLE)

    assert second.session_id == first.session_id
    assert second.revision > first.revision
    assert second.truncated
    assert texts(second) == ["question 2", "answer 2"]


def test_late_unnamed_span_reaches_the_closed_conversation_through_its_trace() -> None:
    harness = Harness()
    harness.send(exchange("conv-child", "t1", 1))
    [first] = harness.sweep_after(IDLE)

    # A straggling child span of the same trace, without the conversation attribute.
    harness.send(chat_span("t1", [_text("user", "question 2")], "answer 2"))
    [second] = harness.sweep_after(IDLE)
    assert second.session_id == first.session_id
    assert second.revision > first.revision
    assert texts(second) == ["question 1", "answer 1", "question 2", "answer 2"]


# --- conversation keys ----------------------------------------------------------------------


def test_spans_of_a_trace_seen_before_the_naming_span_join_the_named_conversation() -> None:
    harness = Harness()
    # Children first: the model call knows only its trace, the root span names the conversation.
    harness.send(chat_span("trace-x", [_text("user", "hello")], "hi there"))
    assert harness.open_count == 1
    harness.send(marker_span("trace-x", {"session.id": "conv-x", "user.id": "u-1"}))
    assert harness.open_count == 1
    harness.send(exchange("conv-x", "trace-y", 2))

    [session] = harness.sweep_after(IDLE)
    assert session.conversation_key == "conv-x"
    assert session.key_source == "session.id"
    assert session.user_id == "u-1"
    assert texts(session) == ["hello", "hi there", "question 2", "answer 2"]
    assert session.trace_ids == ["trace-x", "trace-y"]
    assert harness.closed_total("idle") == 1


def test_unnamed_spans_merged_into_a_closed_conversation_make_its_next_revision() -> None:
    harness = Harness()
    harness.send(exchange("conv-r", "t1", 1))
    [first] = harness.sweep_after(IDLE)

    # A new request whose child span arrives before the root span that names the conversation.
    harness.send(chat_span("t2", [_text("user", "question 2")], "answer 2"))
    harness.send(marker_span("t2", {"session.id": "conv-r"}))
    [second] = harness.sweep_after(IDLE)

    assert second.session_id == first.session_id
    assert second.revision > first.revision
    assert texts(second) == ["question 1", "answer 1", "question 2", "answer 2"]
    assert second.key_source == "session.id"


ALL_KEYS = {
    "gen_ai.conversation.id": "from-genai",
    "session.id": "from-session",
    "traceloop.association.properties.session_id": "from-traceloop",
    "app.chat_id": "from-custom",
}


@pytest.mark.parametrize(
    "present",
    [
        list(ALL_KEYS),
        list(ALL_KEYS)[1:],
        list(ALL_KEYS)[2:],
        list(ALL_KEYS)[3:],
        [],
    ],
    ids=["genai", "session", "traceloop", "custom", "trace"],
)
def test_conversation_key_comes_from_the_first_source_in_priority_order(
    present: list[str],
) -> None:
    harness = Harness(**{"conversation_key.custom_attribute": "app.chat_id"})
    attributes = {name: ALL_KEYS[name] for name in present}
    harness.send(chat_span("trace-prio", [_text("user", "hi")], "hello", attributes=attributes))

    [session] = harness.sweep_after(IDLE)
    if present:
        assert session.key_source == present[0]
        assert session.conversation_key == ALL_KEYS[present[0]]
    else:
        assert session.key_source == "trace_id"
        assert session.conversation_key == "trace-prio"


def test_conversation_key_may_come_from_the_resource() -> None:
    harness = Harness()
    span = chat_span("trace-res", [_text("user", "hi")], "hello")
    span.resource["session.id"] = "conv-from-resource"
    harness.send(span)
    [session] = harness.sweep_after(IDLE)
    assert session.conversation_key == "conv-from-resource"


def test_error_span_without_content_is_kept_for_its_conversation() -> None:
    harness = Harness()
    harness.send(exchange("conv-err", "t1", 1))
    failing = marker_span("t1", {})
    failing.status_code = STATUS_ERROR
    harness.send(failing)
    [session] = harness.sweep_after(IDLE)
    assert session.error_spans == 1
    assert [turn.role for turn in session.turns] == [Role.USER, Role.ASSISTANT]


# --- invariants under arbitrary arrival orders ----------------------------------------------

_step = st.tuples(
    st.sampled_from(["add", "add", "add", "end", "wait", "sweep"]),
    st.integers(0, 5),  # conversation
    st.integers(0, 3),  # trace of that conversation
    st.booleans(),  # does the span name its conversation?
    st.integers(0, 900),  # content bytes
)


@pytest.mark.slow  # a long run: 300 examples
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.lists(_step, max_size=60))
def test_accounting_and_bounds_hold_and_no_content_is_lost(steps: list) -> None:
    config = load_settings(
        None,
        {
            "sessions.idle_timeout_seconds": 10,
            "sessions.reopen_window_seconds": 30,
            "sessions.max_open_sessions": 3,
            "sessions.max_buffered_bytes": 6_000,
            "sessions.max_reopen_bytes": 4_000,
            "sessions.max_session_bytes": 4_000,
            "sessions.max_turns": 6,
            "sessions.max_remembered_sessions": 4,
        },
    ).sessions
    clock = FakeClock()
    sessionizer = Sessionizer(config, clock=clock)
    # Observations stay referenced here, so no id is reused by a later object.
    seen: dict[int, Observation] = {}
    delivered: set[int] = set()

    def collect(items: list) -> None:
        for item in items:
            delivered.update(id(o) for o in item.state.observations)

    for action, conversation, trace, named, size in steps:
        if action == "wait":
            clock.advance(7)
            continue
        if action == "sweep":
            collect(sessionizer.sweep())
        else:
            context = _context(f"c{conversation}" if named else None)
            context.is_end_marker = action == "end"
            trace_id = f"t{conversation}.{trace}"
            observation = _tool_observation(trace_id)
            observation.size_bytes = size
            seen[id(observation)] = observation
            collect(sessionizer.add(trace_id, context, observation, 0))
        assert sessionizer.open_bytes == sum(s.size for s in sessionizer._open.values())
        assert sessionizer.kept_bytes == sum(s.size for s in sessionizer._kept.values())
        assert sessionizer.open_count <= config.max_open_sessions
        assert sessionizer.buffered_bytes <= config.max_buffered_bytes
        assert sessionizer.kept_bytes <= config.max_reopen_bytes
        assert len(sessionizer.revisions) <= config.max_remembered_sessions
        assert not set(sessionizer._open) & set(sessionizer._kept)
        # Kept content is ordered by close time, so expiry and bounds pop from the front.
        closed_at = [s.closed_at for s in sessionizer._kept.values()]
        assert closed_at == sorted(closed_at)

    collect(sessionizer.close_all())
    assert set(seen) <= delivered
