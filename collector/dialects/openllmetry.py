"""OpenLLMetry / Traceloop before v0.55: `gen_ai.prompt.{i}.*` and `gen_ai.completion.{i}.*`.

Newer OpenLLMetry releases emit `gen_ai.input.messages` and are decoded by the GenAI decoder.
Tool spans of the Traceloop SDK carry `traceloop.span.kind=tool` with the decorated function's
input and output as JSON in `traceloop.entity.input` / `traceloop.entity.output`.
"""

from __future__ import annotations

from typing import Any

import orjson
from turnwatch.collector.dialects.base import (
    SpanDecoder,
    first_int,
    first_str,
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


def _content(raw: Any) -> Any:
    """Multimodal content is a JSON-encoded list of parts; keep its text parts."""
    if isinstance(raw, str) and raw.startswith("[{"):
        try:
            parts = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return raw
        texts: list[str] = [
            p["text"] for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str)
        ]
        return "\n".join(texts) if texts else None
    return raw


def _messages(
    group: list[dict[str, Any]], markers: frozenset[str], reasons: list[str]
) -> list[Message]:
    messages = []
    for fields in group:
        role = normalise_role(fields.get("role"))
        if role is None:
            reasons.append("unknown_role")
            continue
        text, redacted = text_or_marker(_content(fields.get("content")), markers)
        calls = [
            tool_call_part(call.get("id"), call.get("name"), call.get("arguments"))
            for call in indexed(fields, "tool_calls")
        ]
        finish = fields.get("finish_reason")
        if role == "tool":
            messages.append(tool_result(fields.get("tool_call_id"), text, redacted))
        else:
            messages.append(
                Message(
                    role=role,
                    text=text,
                    tool_calls=calls,
                    redacted=redacted,
                    finish_reason=finish if isinstance(finish, str) else None,
                )
            )
    return messages


MESSAGE_PREFIXES = ("gen_ai.prompt.", "gen_ai.completion.")


class OpenLLMetryDecoder(SpanDecoder):
    name = "openllmetry"

    def decode(self, span: SpanView) -> Observation | None:
        attributes = span.attributes
        if attributes.get("traceloop.span.kind") == "tool":
            return tool_execution(
                span,
                self.name,
                call_id=first_str(attributes, "gen_ai.tool.call.id"),
                name=first_str(attributes, "traceloop.entity.name") or span.name or "unknown",
                arguments=attributes.get("traceloop.entity.input"),
                result=attributes.get("traceloop.entity.output"),
                error="error" if span.status_code == STATUS_ERROR else None,
            )
        if not has_messages(span, *MESSAGE_PREFIXES):
            return None
        usage = (
            first_str(attributes, "gen_ai.system"),
            first_str(attributes, "gen_ai.response.model", "gen_ai.request.model"),
            first_int(attributes, "gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens"),
            first_int(attributes, "gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens"),
        )
        return flattened_call(span, self.name, _messages, MESSAGE_PREFIXES, self.markers, usage)
