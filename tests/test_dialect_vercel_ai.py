"""The Vercel AI SDK's `ai.*` spans in the shapes of SDK 4 (`args`, `result`, `promptTokens`),
which the real SDK 6 in tests/clients does not send: the wrapping `ai.generateText` span is no
call, the tool span joins its call, and the ids come from the telemetry metadata."""

from __future__ import annotations

import json

from turnwatch.collector.records import SpanView

from tests.test_sessionizer import Harness, marker_span
from turnwatch.schema import Role

START_NS = 1_700_000_000_000_000_000
METADATA = {
    "ai.telemetry.metadata.sessionId": "conv-vercel",
    "ai.telemetry.metadata.userId": "user-7",
}
QUESTION = {"role": "user", "content": [{"type": "text", "text": "Where is the blue parcel?"}]}
CALL = {"type": "tool-call", "toolCallId": "call_v1", "toolName": "lookup", "args": {"c": "blue"}}


def ai_span(operation: str, offset: int, attributes: dict) -> SpanView:
    span = marker_span("vercel-trace", {"ai.operationId": operation, **METADATA, **attributes})
    span.start_ns, span.end_ns = START_NS + offset, START_NS + offset + 1_000
    return span


def test_sdk_4_shapes_rebuild_one_conversation_with_the_tool_joined() -> None:
    harness = Harness()
    harness.send(
        ai_span(
            "ai.generateText",
            0,
            {"ai.prompt": json.dumps({"prompt": "Where is the blue parcel?"})},
        ),
        ai_span(
            "ai.generateText.doGenerate",
            1,
            {
                "ai.prompt.messages": json.dumps(
                    [{"role": "system", "content": "Be brief."}, QUESTION]
                ),
                "ai.response.toolCalls": json.dumps(
                    [{"toolCallId": "call_v1", "toolName": "lookup", "args": '{"c": "blue"}'}]
                ),
                "ai.usage.promptTokens": 30,
                "ai.usage.completionTokens": 5,
            },
        ),
        ai_span(
            "ai.toolCall",
            2,
            {
                "ai.toolCall.name": "lookup",
                "ai.toolCall.id": "call_v1",
                "ai.toolCall.args": '{"c": "blue"}',
                "ai.toolCall.result": json.dumps(json.dumps({"status": "packed"})),
            },
        ),
        ai_span(
            "ai.generateText.doGenerate",
            3,
            {
                "ai.prompt.messages": json.dumps(
                    [
                        QUESTION,
                        {"role": "assistant", "content": [CALL]},
                        {
                            "role": "tool",
                            "content": [
                                {
                                    "type": "tool-result",
                                    "toolCallId": "call_v1",
                                    "toolName": "lookup",
                                    "result": {"status": "packed"},
                                }
                            ],
                        },
                    ]
                ),
                "ai.response.text": "It is packed.",
                "ai.usage.promptTokens": 50,
                "ai.usage.completionTokens": 4,
            },
        ),
    )

    [session] = harness.sweep_after(61)
    assert (session.conversation_key, session.user_id) == ("conv-vercel", "user-7")
    assert session.key_source == "ai.telemetry.metadata.sessionId"
    assert session.system_instructions == ["Be brief."]
    shape = [
        (t.role, t.text, [(c.id, c.arguments, c.result) for c in t.tool_calls])
        for t in session.turns
    ]
    assert shape == [
        (Role.USER, "Where is the blue parcel?", []),
        (Role.ASSISTANT, None, [("call_v1", {"c": "blue"}, {"status": "packed"})]),
        (Role.ASSISTANT, "It is packed.", []),
    ]
    assert [t.usage.input_tokens for t in session.turns if t.usage] == [30, 50]
    assert not session.incomplete, session.incomplete_reasons
