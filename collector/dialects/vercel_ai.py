"""The Vercel AI SDK's telemetry (`experimental_telemetry: {isEnabled: true}`): `ai.*` attributes.

Each model call is an `ai.<function>.doGenerate` (or `.doStream`) span: `ai.prompt.messages` is
the whole prompt as JSON in the SDK's message format (content as a string or a list of `text`,
`tool-call` and `tool-result` parts), the answer is `ai.response.text` and
`ai.response.toolCalls`. Each tool run is an `ai.toolCall` span. The `ai.generateText` /
`ai.streamText` span around them repeats the first prompt and the last answer, so it is no call
of its own. The SDK puts the ids an application passes as telemetry metadata under
`ai.telemetry.metadata.*` (the conversation key defaults read `sessionId` and `userId`).
"""

from __future__ import annotations

from typing import Any

import orjson
from turnwatch.collector.dialects.base import (
    CONTENT_OVERHEAD,
    OBSERVATION_OVERHEAD,
    SpanDecoder,
    first_int,
    first_str,
    held_size,
    maybe_json,
    normalise_role,
    salvage_json,
    split_system,
    text_or_marker,
    tool_call_part,
    tool_execution,
)
from turnwatch.collector.records import (
    STATUS_ERROR,
    DeferredContent,
    Message,
    Observation,
    ObservationKind,
    SpanView,
)

OPERATION = "ai.operationId"
PROMPT_MESSAGES = "ai.prompt.messages"
RESPONSE_TEXT = "ai.response.text"
RESPONSE_TOOL_CALLS = "ai.response.toolCalls"
CALL_SUFFIXES = (".doGenerate", ".doStream")


def _unquoted(value: Any) -> Any:
    """Tool results arrive JSON-encoded, and a string result is encoded twice."""
    value = maybe_json(value)
    if isinstance(value, str) and value.startswith('"'):
        try:
            value = maybe_json(orjson.loads(value))
        except orjson.JSONDecodeError:
            return value
    return value


def _tool_output(output: Any) -> Any:
    """A `tool-result` part's output: `{"type": "text"|"json"|..., "value": ...}` (SDK 5+) or
    the bare result (SDK 4)."""
    if isinstance(output, dict) and "type" in output and "value" in output:
        return _unquoted(output["value"])
    return _unquoted(output)


def _read_message(raw: Any, markers: frozenset[str], reasons: list[str]) -> list[Message]:
    if not isinstance(raw, dict):
        reasons.append("malformed_message")
        return []
    role = normalise_role(raw.get("role"))
    if role is None:
        reasons.append("unknown_role")
        return []
    content = raw.get("content")
    parts = [{"type": "text", "text": content}] if isinstance(content, str) else content
    if not isinstance(parts, list):
        reasons.append("malformed_message")
        return []
    texts: list[str] = []
    redacted = False
    message = Message(role)
    results: list[Message] = []
    for part in parts:
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind == "text":
            text, part_redacted = text_or_marker(part.get("text"), markers)
            redacted |= part_redacted
            if text is not None:
                texts.append(text)
        elif kind == "tool-call":
            arguments = part.get("input", part.get("args"))
            message.tool_calls.append(
                tool_call_part(part.get("toolCallId"), part.get("toolName"), arguments)
            )
        elif kind == "tool-result":
            call_id = part.get("toolCallId")
            results.append(
                Message(
                    role="tool",
                    tool_call_id=str(call_id) if call_id else None,
                    tool_response=_tool_output(part.get("output", part.get("result"))),
                    name=part.get("toolName") if isinstance(part.get("toolName"), str) else None,
                )
            )
    if role == "tool":
        return results
    message.text = "\n".join(texts) if texts else None
    message.redacted = redacted
    return [message]


class VercelAIContent(DeferredContent):
    """A call's prompt, answer text and answer tool calls as they arrived, parsed at assembly.

    Its channel is "": each call's prompt is kept whole rather than cut to what follows the
    previous call's (`drop_known`), and the assembler aligns the resent history away. The SDK
    writes the prompt as one JSON string, so cutting it would need the string-prefix matching of
    `GenAIContent` over a message format of its own; until memory shows the need, the simpler
    copy is the one kept.
    """

    def __init__(self, attributes: dict[str, Any], markers: frozenset[str]) -> None:
        self.markers = markers
        self.prompt = attributes.get(PROMPT_MESSAGES)
        self.text = attributes.get(RESPONSE_TEXT)
        self.tool_calls = attributes.get(RESPONSE_TOOL_CALLS)
        self.history_bytes = held_size(self.prompt)
        self.held_bytes = (
            CONTENT_OVERHEAD
            + self.history_bytes
            + held_size(self.text)
            + held_size(self.tool_calls)
        )

    def fill(self, call: Observation) -> bool:
        reasons = call.incomplete_reasons
        inputs: list[Message] = []
        if isinstance(self.prompt, str):
            prompt, truncated = salvage_json(self.prompt)
            if truncated:
                reasons.append("truncated_content")
            for message in prompt if isinstance(prompt, list) else []:
                inputs.extend(_read_message(message, self.markers, reasons))
        call.inputs, call.system_instructions = split_system(inputs)
        text, redacted = text_or_marker(self.text, self.markers)
        answer = Message("assistant", text=text, redacted=redacted)
        calls, _ = salvage_json(self.tool_calls or "[]")
        for raw_call in calls if isinstance(calls, list) else []:
            if isinstance(raw_call, dict):
                arguments = raw_call.get("input", raw_call.get("args"))
                answer.tool_calls.append(
                    tool_call_part(raw_call.get("toolCallId"), raw_call.get("toolName"), arguments)
                )
        if answer.text is not None or answer.tool_calls or redacted:
            call.outputs = [answer]
        return False


class VercelAIDecoder(SpanDecoder):
    name = "vercel_ai"

    def decode(self, span: SpanView) -> Observation | None:
        attributes = span.attributes
        operation = attributes.get(OPERATION)
        if not isinstance(operation, str):
            return None
        if operation == "ai.toolCall":
            return tool_execution(
                span,
                self.name,
                call_id=first_str(attributes, "ai.toolCall.id"),
                name=first_str(attributes, "ai.toolCall.name") or "unknown",
                arguments=attributes.get("ai.toolCall.args", attributes.get("ai.toolCall.input")),
                result=_unquoted(
                    attributes.get("ai.toolCall.result", attributes.get("ai.toolCall.output"))
                ),
                error="error" if span.status_code == STATUS_ERROR else None,
            )
        if not operation.endswith(CALL_SUFFIXES):
            return None
        call = Observation(
            ObservationKind.LLM_CALL,
            self.name,
            span.trace_id,
            span.span_id,
            span.start_ns,
            span.end_ns,
        )
        call.provider = first_str(attributes, "gen_ai.system", "ai.model.provider")
        call.model = first_str(attributes, "ai.response.model", "ai.model.id")
        call.input_tokens = first_int(
            attributes, "ai.usage.inputTokens", "ai.usage.promptTokens", "gen_ai.usage.input_tokens"
        )
        call.output_tokens = first_int(
            attributes,
            "ai.usage.outputTokens",
            "ai.usage.completionTokens",
            "gen_ai.usage.output_tokens",
        )
        if span.dropped_attributes:
            call.incomplete_reasons.append("dropped_attributes")
        content = VercelAIContent(attributes, self.markers)
        call.content = content
        call.size_bytes = OBSERVATION_OVERHEAD + content.held_bytes
        return call
