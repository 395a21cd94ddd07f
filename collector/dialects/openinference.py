"""OpenInference (Arize Phoenix): flattened `llm.input_messages.{i}.message.*` attributes.

TOOL spans (`openinference.span.kind=TOOL`) carry `tool.name`, `tool.id` (or `tool_call.id`),
`input.value` (the arguments) and `output.value` (the result). The LangChain instrumentation
sets no `tool.id`: its `output.value` is the serialised `ToolMessage`, whose `tool_call_id` joins
the execution to its call and whose `content` is the result.

Only LLM spans (or spans of no kind) are model calls: LangChain's CHAIN spans (the LangGraph run,
each graph node) carry partial `llm.input_messages` copies of the state that are not calls.
"""

from __future__ import annotations

from typing import Any

from turnwatch.collector.dialects.base import (
    SpanDecoder,
    first_int,
    first_str,
    maybe_json,
    normalise_role,
    text_or_marker,
    tool_call_part,
    tool_execution,
)
from turnwatch.collector.dialects.flattened import (
    flattened_call,
    has_messages,
    indexed,
    tool_result,
)
from turnwatch.collector.records import STATUS_ERROR, Message, Observation, SpanView


def _messages(
    group: list[dict[str, Any]], markers: frozenset[str], reasons: list[str]
) -> list[Message]:
    messages = []
    for fields in group:
        role = normalise_role(fields.get("message.role"))
        if role is None:
            reasons.append("unknown_role")
            continue
        text, redacted = text_or_marker(fields.get("message.content"), markers)
        if text is None and not redacted:
            parts = indexed(fields, "message.contents")
            texts = []
            for part in parts:
                if part.get("message_content.type", "text") == "text":
                    part_text, part_redacted = text_or_marker(
                        part.get("message_content.text"), markers
                    )
                    redacted |= part_redacted
                    if part_text is not None:
                        texts.append(part_text)
            text = "\n".join(texts) if texts else None
        calls = [
            tool_call_part(
                call.get("tool_call.id"),
                call.get("tool_call.function.name"),
                call.get("tool_call.function.arguments"),
            )
            for call in indexed(fields, "message.tool_calls")
        ]
        if role == "tool":
            call_id = fields.get("message.tool_call_id")
            messages.append(tool_result(call_id, text, redacted, fields.get("message.name")))
        else:
            messages.append(Message(role=role, text=text, tool_calls=calls, redacted=redacted))
    return messages


MESSAGE_PREFIXES = ("llm.input_messages.", "llm.output_messages.")
CALL_KINDS = frozenset({None, "LLM"})


def _tool_message(output: Any) -> dict[str, Any] | None:
    """LangChain's serialised `ToolMessage` (`{"type": "tool", "data": {...}}`), if it is one."""
    value = maybe_json(output)
    if not isinstance(value, dict) or value.get("type") != "tool":
        return None
    data = value.get("data")
    return data if isinstance(data, dict) else None


class OpenInferenceDecoder(SpanDecoder):
    name = "openinference"

    def decode(self, span: SpanView) -> Observation | None:
        attributes = span.attributes
        kind = attributes.get("openinference.span.kind")
        if kind == "TOOL":
            error = None
            if span.status_code == STATUS_ERROR:
                error = first_str(attributes, "exception.type", "error.type") or "error"
            result = attributes.get("output.value")
            call_id = first_str(attributes, "tool.id", "tool_call.id")
            message = _tool_message(result)
            if message is not None:
                result = message.get("content")
                call_id = call_id or first_str(message, "tool_call_id")
            return tool_execution(
                span,
                self.name,
                call_id=call_id,
                name=first_str(attributes, "tool.name") or span.name or "unknown",
                arguments=attributes.get("input.value"),
                result=result,
                error=error,
            )
        if kind not in CALL_KINDS or not has_messages(span, *MESSAGE_PREFIXES):
            return None
        usage = (
            first_str(attributes, "llm.provider", "llm.system"),
            first_str(attributes, "llm.response.model_name", "llm.model_name"),
            first_int(attributes, "llm.token_count.prompt"),
            first_int(attributes, "llm.token_count.completion"),
        )
        return flattened_call(span, self.name, _messages, MESSAGE_PREFIXES, self.markers, usage)
