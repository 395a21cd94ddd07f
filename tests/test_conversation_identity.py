"""How conversations are named and counted when instrumentation is naive, partial or odd:
keys scoped by service, trace-keyed sessions counted and warned about, buckets that merge not
counted as sessions, content-less sessions kept (tokens, latency) but unscored, and the
OpenLLMetry event-mode shapes (calls beside the choice's message, tool messages without ids)."""

from __future__ import annotations

import logging

import orjson
import pytest
from turnwatch.collector.records import LogView, SpanView
from turnwatch.scorers.config import ScorerConfig
from turnwatch.scorers.runner import Scorer, bus_processor

from tests.test_sessionizer import Harness, _text, chat_span, marker_span
from turnwatch.schema import Role
from turnwatch.scores import Part, Status

START_NS = 1_700_000_000_000_000_000


def counter(harness: Harness, name: str) -> float:
    return harness.registry.get_sample_value(name) or 0.0


def with_service(span: SpanView, service: str) -> SpanView:
    span.resource = {"service.name": service}
    return span


def test_two_services_with_the_same_conversation_id_are_two_sessions() -> None:
    harness = Harness()
    for service, trace in [("support-bot", "t-support"), ("billing-bot", "t-billing")]:
        span = chat_span(trace, [_text("user", f"hi {service}")], "hello", attributes={})
        span.attributes["gen_ai.conversation.id"] = "conv-1"
        harness.send(with_service(span, service))

    sessions = harness.sweep_after(61)
    assert sorted(s.service for s in sessions) == ["billing-bot", "support-bot"]
    assert {s.conversation_key for s in sessions} == {"conv-1"}
    assert len({s.session_id for s in sessions}) == 2
    assert {s.service: s.turns[0].text for s in sessions} == {
        "support-bot": "hi support-bot",
        "billing-bot": "hi billing-bot",
    }
    assert counter(harness, "turnwatch_sessions_opened_total") == 2


def test_trace_buckets_that_merge_into_a_conversation_are_not_counted_as_sessions() -> None:
    harness = Harness()
    history: list[dict] = []
    for turn in range(4):
        history.append(_text("user", f"question {turn}"))
        # The chat span comes first and names nothing; the root span naming the conversation
        # arrives after it, as batch exporters send children before parents.
        harness.send(chat_span(f"trace-{turn}", list(history), f"answer {turn}"))
        harness.send(marker_span(f"trace-{turn}", {"session.id": "conv-merged"}))
        history.append(_text("assistant", f"answer {turn}"))

    [session] = harness.sweep_after(61)
    assert len(session.turns) == 8 and session.key_source == "session.id"
    assert counter(harness, "turnwatch_sessions_opened_total") == 1
    assert harness.closed_total("idle") == 1
    assert counter(harness, "turnwatch_sessions_trace_keyed_total") == 0


def test_sessions_keyed_by_trace_id_are_counted_and_warned_about_once_a_minute(caplog) -> None:
    caplog.set_level(logging.WARNING, logger="turnwatch.collector")
    harness = Harness()

    def naive_calls(*traces: str) -> list:
        for trace in traces:
            harness.send(chat_span(trace, [_text("user", "hello")], "hi"))
        return harness.sweep_after(61)

    first = naive_calls("naive-1", "naive-2", "naive-3")
    assert [s.key_source for s in first] == ["trace_id"] * 3
    assert counter(harness, "turnwatch_sessions_trace_keyed_total") == 3
    assert counter(harness, "turnwatch_sessions_opened_total") == 3
    warnings = [r for r in caplog.records if r.getMessage().startswith("sessions keyed by trace")]
    assert [(w.levelno, w.sessions) for w in warnings] == [(logging.WARNING, 1)]
    assert warnings[0].reason == "no_conversation_key" and warnings[0].service == "support-bot"

    # The minute is over (the sweep above advanced the clock past it): the next one warns with
    # the sessions it did not report.
    naive_calls("naive-4")
    warnings = [r for r in caplog.records if r.getMessage().startswith("sessions keyed by trace")]
    assert [w.sessions for w in warnings] == [1, 3]
    assert "hello" not in caplog.text


def content_less_call(trace: str, start_ns: int) -> SpanView:
    """A chat span of instrumentation without content capture: usage and timing only."""
    span = chat_span(trace, [], "", start_ns=start_ns, attributes={"session.id": "conv-dark"})
    del span.attributes["gen_ai.input.messages"], span.attributes["gen_ai.output.messages"]
    span.attributes.update({"gen_ai.usage.input_tokens": 40, "gen_ai.usage.output_tokens": 7})
    return span


def test_a_content_less_session_keeps_tokens_and_latency_and_is_unscored() -> None:
    harness = Harness()
    harness.send(content_less_call("dark-1", START_NS), content_less_call("dark-2", START_NS + 10))

    [session] = harness.sweep_after(61)
    assert session.incomplete_reasons == ["no_content"]
    assert [(t.role, t.text, t.usage.input_tokens, t.latency_ms) for t in session.turns] == [
        (Role.ASSISTANT, None, 40, 1.0),
        (Role.ASSISTANT, None, 40, 1.0),
    ]

    record = Scorer(ScorerConfig()).score(session)
    results = [*record.turn_level, *record.trajectory_level, *record.session_level]
    assert results and {r.status for r in results} == {Status.UNSCORED}
    assert {r.unscored_reason for r in results} == {
        "no message content in the session (instrumentation without content capture?)"
    }
    assert record.joint_success.value is None and record.critical_failures == []
    assert (record.budgets.input_tokens, record.budgets.output_tokens) == (80, 14)
    assert record.budgets.latency_ms == 2.0


def test_a_session_with_content_is_still_scored() -> None:
    # Control for the test above: the same scorer passes and fails checks on text.
    harness = Harness()
    harness.send(chat_span("lit-1", [_text("user", "hello")], "hi", attributes={"session.id": "c"}))
    [session] = harness.sweep_after(61)
    record = Scorer(ScorerConfig()).score(session)
    statuses = {r.status for r in [*record.turn_level, *record.session_level]}
    assert Status.PASSED in statuses


def event(trace: str, span: str, name: str, body: dict, time_ns: int) -> LogView:
    return LogView(
        time_ns=time_ns,
        trace_id=trace,
        span_id=span,
        event_name=name,
        body=body,
        attributes={"gen_ai.system": "openai"},
        resource={"service.name": "support-bot"},
        scope_name="opentelemetry.instrumentation.openai.v1",
    )


TOOL_CALL = {
    "id": "call_7",
    "type": "function",
    "function": {"name": "lookup_parcel", "arguments": '{"label": "blue"}'},
}


def test_openllmetry_event_mode_calls_beside_the_message_and_tool_messages_without_ids() -> None:
    harness = Harness()
    trace = "events-trace"
    asked = {"content": "Where is the blue parcel?"}
    records = [
        # Call 1: the question; the choice carries its tool calls beside `message`.
        event(trace, "span-1", "gen_ai.user.message", asked, START_NS),
        event(
            trace,
            "span-1",
            "gen_ai.choice",
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {"content": None},
                "tool_calls": [TOOL_CALL],
            },
            START_NS + 1,
        ),
        # Call 2: the history resent, with the tool's answer in a tool message without an id.
        event(trace, "span-2", "gen_ai.user.message", asked, START_NS + 2),
        event(
            trace,
            "span-2",
            "gen_ai.assistant.message",
            {"content": None, "tool_calls": [TOOL_CALL]},
            START_NS + 3,
        ),
        event(
            trace,
            "span-2",
            "gen_ai.tool.message",
            {"content": '{"status": "packed"}'},
            START_NS + 4,
        ),
        event(
            trace,
            "span-2",
            "gen_ai.choice",
            {"index": 0, "finish_reason": "stop", "message": {"content": "It is packed."}},
            START_NS + 5,
        ),
    ]
    assert harness.pipeline.accept_logs(records) == 0
    harness.send(marker_span(trace, {"session.id": "conv-events"}))

    [session] = harness.sweep_after(61)
    assert [(t.role, t.text, [(c.id, c.result) for c in t.tool_calls]) for t in session.turns] == [
        (Role.USER, "Where is the blue parcel?", []),
        (Role.ASSISTANT, None, [("call_7", {"status": "packed"})]),
        (Role.ASSISTANT, "It is packed.", []),
    ]
    assert not session.incomplete, session.incomplete_reasons


def openinference_span(trace: str, start_ns: int, attributes: dict) -> SpanView:
    span = marker_span(trace, {"session.id": "conv-langchain", **attributes})
    span.start_ns, span.end_ns = start_ns, start_ns + 1_000
    return span


def test_langchain_tool_span_in_its_own_trace_joins_its_call_and_chain_spans_are_not_calls():
    harness = Harness()
    question = {
        "llm.input_messages.0.message.role": "user",
        "llm.input_messages.0.message.content": "Where is the blue parcel?",
    }
    call = {
        "message.role": "assistant",
        "message.tool_calls.0.tool_call.id": "call_lc1",
        "message.tool_calls.0.tool_call.function.name": "lookup_parcel",
        "message.tool_calls.0.tool_call.function.arguments": '{"label": "blue"}',
    }
    tool_message = {
        "type": "tool",
        "data": {"content": '{"status": "packed"}', "tool_call_id": "call_lc1", "type": "tool"},
    }
    harness.send(
        # The LangGraph run and its graph node: CHAIN spans with a partial copy of the state.
        openinference_span(
            "graph-trace",
            START_NS,
            {"openinference.span.kind": "CHAIN", "llm.input_messages.0.message.role": "user"},
        ),
        openinference_span(
            "graph-trace",
            START_NS + 1,
            {"openinference.span.kind": "CHAIN", **question},
        ),
        openinference_span(
            "graph-trace",
            START_NS + 2,
            {
                "openinference.span.kind": "LLM",
                **question,
                **{f"llm.output_messages.0.{key}": value for key, value in call.items()},
            },
        ),
        # The tool ran in a trace of its own; its call id is only inside `output.value`.
        openinference_span(
            "tool-trace",
            START_NS + 3,
            {
                "openinference.span.kind": "TOOL",
                "tool.name": "lookup_parcel",
                "input.value": "blue",
                "output.value": orjson.dumps(tool_message).decode(),
            },
        ),
        openinference_span(
            "graph-trace",
            START_NS + 4,
            {
                "openinference.span.kind": "LLM",
                **question,
                **{f"llm.input_messages.1.{key}": value for key, value in call.items()},
                "llm.input_messages.2.message.role": "tool",
                "llm.input_messages.2.message.content": '{"status": "packed"}',
                "llm.input_messages.2.message.tool_call_id": "call_lc1",
                "llm.output_messages.0.message.role": "assistant",
                "llm.output_messages.0.message.content": "It is packed.",
            },
        ),
    )

    [session] = harness.sweep_after(61)
    assert [(t.role, t.text, [(c.id, c.result) for c in t.tool_calls]) for t in session.turns] == [
        (Role.USER, "Where is the blue parcel?", []),
        (Role.ASSISTANT, None, [("call_lc1", {"status": "packed"})]),
        (Role.ASSISTANT, "It is packed.", []),
    ]
    [tool_call] = session.turns[1].tool_calls
    assert tool_call.arguments == {"label": "blue"}


@pytest.mark.parametrize("base_url", [None, "http://127.0.0.1:9/v1"], ids=["heuristic", "remote"])
async def test_a_content_less_session_has_every_judge_metric_unscored_without_a_judge_call(
    base_url,
) -> None:
    """Inline (heuristic) and through the backlog (a remote judge, here one nobody answers):
    the judge is never asked about a session without text, and says why."""
    harness = Harness()
    harness.send(content_less_call("dark-3", START_NS))
    [session] = harness.sweep_after(61)
    config = ScorerConfig.model_validate({"judge": {"endpoint": {"base_url": base_url}}})
    published: list = []

    async def publish(topic: str, key: str, record) -> None:
        published.append(record)

    processor = bus_processor(Scorer(config), publish=publish)
    [output] = await processor(session)
    await processor.drain(5)

    assert published == []  # no checks part waiting for a judged part: one complete record
    record = output.record
    assert record.part is Part.COMPLETE
    judged = [spec.name for spec in processor.scorer.judge.metrics]
    assert judged and [m.name for m in record.metrics] == judged
    assert {(m.value, m.unscored_reason) for m in record.metrics} == {
        (None, "no message content in the session (instrumentation without content capture?)")
    }
