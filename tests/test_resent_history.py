"""Resent history: stored and parsed once, assembled exactly as if every call were parsed whole.

Stateless chat APIs resend the whole history on every call. The sessionizer keeps only what each
call adds to the previous call's input (`Observation.resends`), and the assembler aligns from
that. What is asserted: long conversations in every dialect that resends come out whole and equal
to the same turns sent as deltas, their buffered size stays what the deltas need, and for any
history a client may send (edited, cut to a window, retried, out of order, cut by a length limit)
the session is the one the assembler builds from every call's whole input.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry
from turnwatch.collector.metrics import CollectorMetrics
from turnwatch.collector.pipeline import PendingSession, SessionBuilder
from turnwatch.collector.records import SpanView
from turnwatch.collector.session_keys import scoped_key
from turnwatch.collector.sessionizer import ClosedSession, OpenSession

from tests.conversations import (
    DIALECTS,
    call_attributes,
    conversation_spans,
    received,
    span,
    texts,
)
from tests.stages import TEST_ID_KEY, assembling_pipeline
from turnwatch.app.settings import load_settings
from turnwatch.schema import CloseReason, SamplingDecision, SamplingReason, Session

RESENDING = ("genai", "genai_structured", "openinference", "openllmetry")


def through_pipeline(spans: list[SpanView], **overrides: object) -> tuple[list[Session], object]:
    settings = load_settings(None, dict(overrides))
    pipeline, built = assembling_pipeline(settings.collector, CollectorMetrics(CollectorRegistry()))
    for item in spans:
        assert pipeline.accept_spans([item]) == 0
    sessionizer = pipeline.sessionizer
    pipeline.close_all()
    return built.take(), sessionizer


def reference(spans: list[SpanView]) -> Session:
    """The session built from every call decoded whole: no call knows any other."""
    settings = load_settings(None, {})
    pipeline, _ = assembling_pipeline(settings.collector, CollectorMetrics(CollectorRegistry()))
    state = OpenSession(
        key=scoped_key("long-chat-bot", spans[0].attributes["session.id"]),
        key_source="session.id",
        opened_at=0.0,
        last_activity=0.0,
        revision=1,
    )
    for item in spans:
        observation = pipeline._first_match(pipeline.span_decoders, item)
        assert observation is not None
        assert observation.resends is None
        state.observations.append(observation)
        state.trace_ids[item.trace_id] = None
        state.first_ns = min(filter(None, (state.first_ns, item.start_ns)), default=0)
        state.last_ns = max(state.last_ns, item.start_ns)
    state.scopes["tests.conversations"] = None
    state.service = "long-chat-bot"
    state.service_from_model_call = True
    decision = SamplingDecision(
        sampled=True, reason=SamplingReason.RATE, rate=1.0, hash_fraction=0.0
    )
    build = SessionBuilder("unknown_service", CollectorMetrics(CollectorRegistry()), TEST_ID_KEY)
    return build(PendingSession(ClosedSession(state, CloseReason.SHUTDOWN), decision))


def comparable(session: Session) -> dict:
    return session.model_dump(exclude={"revision", "sampling", "key_source"})


@pytest.mark.slow  # a long run: 400-turn conversations, about 20 s in all
@pytest.mark.parametrize("dialect", RESENDING)
def test_a_400_turn_resent_conversation_passes_whole_at_default_settings(dialect: str) -> None:
    resent = received(conversation_spans(dialect, f"long-{dialect}", 200, resent=True))
    deltas = received(conversation_spans(dialect, f"long-{dialect}", 200, resent=False))
    resent[-1].attributes["turnwatch.session.end"] = "true"
    deltas[-1].attributes["turnwatch.session.end"] = "true"

    [from_resent], resent_sessionizer = through_pipeline(resent)
    [from_deltas], delta_sessionizer = through_pipeline(deltas)

    assert from_resent.close_reason is CloseReason.END_MARKER
    assert not from_resent.truncated and not from_resent.incomplete
    expected = texts(f"long-{dialect}", 400)
    assert [(turn.role.value, turn.text) for turn in from_resent.turns] == expected
    assert comparable(from_resent) == comparable(from_deltas)
    # Kept for the reopen window: the resent conversation costs what the deltas cost, plus each
    # previous answer once more (resent at the head of what a call adds) and the last call's
    # whole input (the next call is compared with it); not 200 copies of the history.
    [kept] = resent_sessionizer._kept.values()
    [tail] = kept.tails.values()
    assert tail.observation is kept.observations[-1]
    assert tail.extra_bytes > 0
    kept_deltas = delta_sessionizer.kept_bytes
    assert kept_deltas < resent_sessionizer.kept_bytes - tail.extra_bytes < 1.5 * kept_deltas


@pytest.mark.parametrize("dialect", RESENDING)
def test_each_call_of_a_resent_conversation_keeps_only_what_it_adds(dialect: str) -> None:
    spans = received(conversation_spans(dialect, f"keep-{dialect}", 6, resent=True))
    settings = load_settings(None, {})
    pipeline, _ = assembling_pipeline(settings.collector, CollectorMetrics(CollectorRegistry()))
    pipeline.accept_spans(spans)
    [state] = pipeline.sessionizer._open.values()
    first, *later = state.observations
    assert first.resends is None
    assert [call.resends for call in later] == state.observations[:-1]
    # What a later call holds: the previous answer (resent as history) and the new question.
    for call in later:
        parsed = call.parsed()
        assert [message.role for message in parsed.inputs] == ["assistant", "user"]


@pytest.mark.parametrize("dialect", ["openinference", "openllmetry"])
def test_flattened_calls_keep_only_new_encodings_and_the_tail_shares_them(dialect: str) -> None:
    """The receiver leaves flattened message attributes undecoded; a call that extends the
    previous one keeps only the encodings it adds, and the channel's tail (the whole input the
    next call is compared with) is made of the calls' own encodings, not a copy."""
    spans = received(conversation_spans(dialect, f"share-{dialect}", 5, resent=True))
    assert all(not key.startswith(("llm.input", "gen_ai.prompt")) for key in spans[-1].attributes)
    settings = load_settings(None, {})
    pipeline, _ = assembling_pipeline(settings.collector, CollectorMetrics(CollectorRegistry()))
    pipeline.accept_spans(spans)
    [state] = pipeline.sessionizer._open.values()
    first, *later = state.observations
    assert len(first.content.inputs) == 2  # the first question: role and content
    assert [len(call.content.inputs) for call in later] == [4] * 4  # answer and question
    held = [item for call in state.observations for item in call.content.inputs]
    [tail] = state.tails.values()
    whole = tail.history.flat()
    assert len(whole) == len(held) == 2 * 9
    assert all(kept is own for kept, own in zip(whole, held, strict=True))
    # One link per call, each holding that call's own list: nothing is copied per call.
    links, link = [], tail.history
    while link is not None:
        links.append(link.own)
        link = link.before
    assert [id(own) for own in reversed(links)] == [
        id(call.content.inputs) for call in state.observations
    ]
    assert tail.extra_bytes == 0  # each link is counted in its call's held bytes


def test_a_genai_text_the_receiver_recognised_is_extended_by_identity() -> None:
    """GenAI's JSON string past 8 KiB: the receiver hands on only what follows the previous
    call's text, the call keeps that as its rest without comparing, and the channel keeps the
    calls' own strings as the whole input; the session is the one the whole texts give."""
    sent = conversation_spans("genai", "text-identity", 30, resent=True)
    spans = received(sent)
    assert sum(item.resent_run is not None for item in spans) >= 20
    settings = load_settings(None, {})
    pipeline, _ = assembling_pipeline(settings.collector, CollectorMetrics(CollectorRegistry()))
    pipeline.accept_spans(spans)
    [state] = pipeline.sessionizer._open.values()
    recognised = [
        (call, received_span)
        for call, received_span in zip(state.observations, spans, strict=True)
        if received_span.resent_run
    ]
    for call, received_span in recognised:
        assert call.resends is not None
        # Kept as the receiver handed it on: nothing was compared, sliced or copied.
        assert call.content.inputs is received_span.attributes["gen_ai.input.messages"]
        assert call.content.inputs.startswith(", {")
    [tail] = state.tails.values()
    assert tail.history.text() == sent[-1].attributes["gen_ai.input.messages"]
    assert tail.history.own is state.observations[-1].content.inputs
    [from_runs], _ = through_pipeline(spans)
    [from_whole], _ = through_pipeline(sent)
    assert comparable(from_runs) == comparable(from_whole) == comparable(reference(sent))


def _variant_inputs(messages: list, call: int, variant: str) -> list:
    """What a client sends as call `call`'s input under one way of (mis)handling history."""
    whole = messages[: 2 * call + 1]
    if variant == "window":  # a sliding window of the last messages: no longer a prefix
        return whole[-3:]
    if variant == "edited" and call:  # an earlier message rewritten (a client-side summary)
        return [("user", "summary of the conversation so far"), *whole[1:]]
    if variant == "no_answers":  # answers left out of the history
        return [item for item in whole if item[0] == "user"]
    if variant == "delta":
        return whole[-1:]
    return whole


_calls = st.lists(
    st.sampled_from(["whole", "whole", "whole", "window", "edited", "no_answers", "delta"]),
    min_size=1,
    max_size=9,
)


def variant_spans(
    dialect: str, variants: list[str], retries: set[int], swaps: set[int], cut: int = -1
) -> list[SpanView]:
    """One call per variant (`_variant_inputs`), the calls in `retries` sent twice, neighbours
    at `swaps` arriving in each other's place, and with GenAI the input of call `cut` cut."""
    messages = texts(f"edit-{dialect}", 2 * len(variants), length=40)
    spans = []
    for call, variant in enumerate(variants):
        attributes = call_attributes(
            dialect, _variant_inputs(messages, call, variant), messages[2 * call + 1]
        )
        if call == cut and dialect == "genai":
            # An attribute length limit cut the history inside its last message.
            attributes["gen_ai.input.messages"] = attributes["gen_ai.input.messages"][:-12]
        spans.append(span(f"edit-{dialect}", call, attributes))
        if call in retries:  # the same call sent again (a retry, or an at-least-once resend)
            spans.append(span(f"edit-{dialect}", 100 + call, attributes))
    for index in sorted(swaps):  # arrival order is not call order
        if index + 1 < len(spans):
            spans[index], spans[index + 1] = spans[index + 1], spans[index]
    return received(spans)


HISTORIES = st.builds(
    variant_spans,
    dialect=st.sampled_from(DIALECTS),
    variants=_calls,
    retries=st.sets(st.integers(0, 8), max_size=2),
    swaps=st.sets(st.integers(0, 7), max_size=2),
    cut=st.integers(-1, 8),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spans=HISTORIES)
def test_any_history_assembles_as_every_call_parsed_whole(spans: list[SpanView]) -> None:
    [session], _ = through_pipeline(spans)
    assert comparable(session) == comparable(reference(spans))


def edited_history(messages: list) -> list[list]:
    """Four calls' inputs: the second extends the first, the third rewrites the first message
    (a client-side summary: not a prefix), the fourth extends the third."""
    return [
        messages[:1],
        messages[:3],
        [("user", "summary of the first exchange"), *messages[2:5]],
        [("user", "summary of the first exchange"), *messages[2:7]],
    ]


@pytest.mark.parametrize("dialect", RESENDING)
def test_a_history_the_client_cut_or_edited_is_kept_whole_and_assembled_as_sent(
    dialect: str,
) -> None:
    messages = texts(f"cut-{dialect}", 8, length=40)
    inputs = edited_history(messages)
    spans = received(
        [
            span(f"cut-{dialect}", call, call_attributes(dialect, sent, messages[2 * call + 1]))
            for call, sent in enumerate(inputs)
        ]
    )
    settings = load_settings(None, {})
    pipeline, built = assembling_pipeline(settings.collector, CollectorMetrics(CollectorRegistry()))
    pipeline.accept_spans(spans)
    [state] = pipeline.sessionizer._open.values()
    calls = state.observations
    assert [call.resends for call in calls] == [None, calls[0], None, calls[2]]

    pipeline.close_all()
    [session] = built.take()
    assert comparable(session) == comparable(reference(spans))
    session_texts = [turn.text for turn in session.turns]
    assert session_texts.count("summary of the first exchange") == 1
    assert session_texts[:4] == [text for _, text in messages[:4]]
    assert session_texts[-3:] == [text for _, text in messages[5:8]]
