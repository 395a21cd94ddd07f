"""OpenInference (Arize Phoenix): flattened `llm.input_messages.{i}.message.*` attributes.

TOOL spans (`openinference.span.kind=TOOL`) carry `tool.name`, `tool.id` (or `tool_call.id`),
`input.value` (the arguments) and `output.value` (the result).
"""

from __future__ import annotations

from typing import Any

from turnwatch.collector.dialects.base import (
    OBSERVATION_OVERHEAD,
    SpanDecoder,
    first_int,
    first_str,
    maybe_json,
    normalise_role,
    text_or_marker,
    tool_call_part,
    tool_execution,
)
from turnwatch.collector.dialects.flattened import flattened_content, has_prefix, indexed
from turnwatch.collector.records import (
    STATUS_ERROR,
    Message,
    Observation,
    ObservationKind,
    SpanView,
)


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
        call_id = fields.get("message.tool_call_id")
        if role == "tool":
            messages.append(
                Message(
                    role="tool",
                    tool_call_id=str(call_id) if call_id else None,
                    tool_response=maybe_json(text),
                    name=fields.get("message.name"),
                    redacted=redacted,
                )
            )
        else:
            messages.append(Message(role=role, text=text, tool_calls=calls, redacted=redacted))
    return messages


MESSAGE_PREFIXES = ("llm.input_messages.", "llm.output_messages.")


class OpenInferenceDecoder(SpanDecoder):
    name = "openinference"

    def decode(self, span: SpanView) -> Observation | None:
        attributes = span.attributes
        kind = attributes.get("openinference.span.kind")
        if kind == "TOOL":
            error = None
            if span.status_code == STATUS_ERROR:
                error = first_str(attributes, "exception.type", "error.type") or "error"
            return tool_execution(
                span,
                self.name,
                call_id=first_str(attributes, "tool.id", "tool_call.id"),
                name=first_str(attributes, "tool.name") or span.name or "unknown",
                arguments=attributes.get("input.value"),
                result=attributes.get("output.value"),
                error=error,
            )
        if not has_prefix(attributes, *MESSAGE_PREFIXES):
            return None
        content = flattened_content(
            self.name,
            _messages,
            "llm.input_messages",
            "llm.output_messages",
            attributes,
            self.markers,
        )
        return Observation(
            kind=ObservationKind.LLM_CALL,
            dialect=self.name,
            trace_id=span.trace_id,
            span_id=span.span_id,
            start_ns=span.start_ns,
            end_ns=span.end_ns,
            provider=first_str(attributes, "llm.provider", "llm.system"),
            model=first_str(attributes, "llm.response.model_name", "llm.model_name"),
            input_tokens=first_int(attributes, "llm.token_count.prompt"),
            output_tokens=first_int(attributes, "llm.token_count.completion"),
            incomplete_reasons=["dropped_attributes"] if span.dropped_attributes else [],
            size_bytes=OBSERVATION_OVERHEAD + content.held_bytes,
            content=content,
        )
