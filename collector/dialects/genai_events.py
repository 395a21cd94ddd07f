"""OTel GenAI v1.28-v1.36: one event per message (`gen_ai.user.message`, `gen_ai.choice`, ...).

They arrive as span events on the chat span, or as log records correlated to it by trace and span
id, with the event name in `LogRecord.event_name` or (older Python SDKs) in the `event.name`
attribute. Log records are decoded one at a time; the session assembler groups them by span id.
"""

from __future__ import annotations

from typing import Any

from turnwatch.collector.dialects.base import (
    OBSERVATION_OVERHEAD,
    LogDecoder,
    SpanDecoder,
    first_int,
    first_str,
    maybe_json,
    messages_size,
    salvage_json,
    split_system,
    text_or_marker,
    tool_call_part,
)
from turnwatch.collector.records import LogView, Message, Observation, ObservationKind, SpanView

EVENT_ROLES = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}
CHOICE_EVENT = "gen_ai.choice"
EVENT_CONTENT = "gen_ai.event.content"


def _body(raw: Any) -> tuple[dict[str, Any], bool]:
    """Return (body, truncated). A JSON-string body may have been cut by a length limit."""
    if isinstance(raw, str):
        if raw.lstrip()[:1] != "{":
            return {"content": raw}, False
        parsed, truncated = salvage_json(raw)
        return (parsed if isinstance(parsed, dict) else {}), truncated
    return (raw if isinstance(raw, dict) else {}), False


def _span_event_body(attributes: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """Span events hold the body as a JSON string in `gen_ai.event.content` (Azure AI
    Inference, Semantic Kernel), as a `body` attribute, or as the event attributes themselves."""
    for key in (EVENT_CONTENT, "body"):
        if key in attributes:
            return _body(attributes[key])
    return attributes, False


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _lacks_content(body: dict[str, Any]) -> bool:
    """Content capture off: the event says a message was sent but not what it said.

    Read from the body, not the message: `content: ""` is captured (if empty) content.
    """
    message = body.get("message")
    inner = message if isinstance(message, dict) else body
    return inner.get("content") is None and not (inner.get("tool_calls") or body.get("tool_calls"))


def _reasons(truncated: bool, lacks_content: bool) -> list[str]:
    return [
        reason
        for reason, present in (("truncated_content", truncated), ("no_content", lacks_content))
        if present
    ]


def _tool_calls(raw: Any) -> list:
    calls = []
    for call in raw if isinstance(raw, list) else []:
        if not isinstance(call, dict):
            continue
        function = _object(call.get("function"))
        calls.append(
            tool_call_part(call.get("id"), function.get("name"), function.get("arguments"))
        )
    return calls


def message_from_event(
    event_name: str, body: dict[str, Any], markers: frozenset[str]
) -> tuple[Message, bool] | None:
    """Return (message, is_output) for a per-message event, or None for other events."""
    if event_name == CHOICE_EVENT:
        inner = _object(body.get("message"))
        text, redacted = text_or_marker(inner.get("content"), markers)
        finish = body.get("finish_reason")
        # The conventions put the calls in `message.tool_calls`; OpenLLMetry's event mode puts
        # them beside `message`, in the choice itself.
        calls = inner.get("tool_calls") or body.get("tool_calls")
        return (
            Message(
                role="assistant",
                text=text,
                redacted=redacted,
                tool_calls=_tool_calls(calls),
                finish_reason=finish if isinstance(finish, str) else None,
            ),
            True,
        )
    role = EVENT_ROLES.get(event_name)
    if role is None:
        return None
    text, redacted = text_or_marker(body.get("content"), markers)
    if role == "tool":
        call_id = body.get("id") or body.get("tool_call_id")
        return (
            Message(
                role="tool",
                tool_call_id=str(call_id) if call_id not in (None, "") else None,
                # Same shape as the other dialects' results: an object when it is JSON.
                tool_response=maybe_json(text),
                redacted=redacted,
            ),
            False,
        )
    return (
        Message(
            role=role, text=text, redacted=redacted, tool_calls=_tool_calls(body.get("tool_calls"))
        ),
        False,
    )


class GenAISpanEventDecoder(SpanDecoder):
    name = "genai_events"

    def decode(self, span: SpanView) -> Observation | None:
        inputs: list[Message] = []
        outputs: list[Message] = []
        any_truncated = any_lacking = False
        for event in span.events:
            body, truncated = _span_event_body(event.attributes)
            decoded = message_from_event(event.name, body, self.markers)
            if decoded is None:
                continue
            message, is_output = decoded
            message.truncated = truncated
            any_truncated |= truncated
            any_lacking |= _lacks_content(body)
            (outputs if is_output else inputs).append(message)
        if not inputs and not outputs:
            return None
        reasons = _reasons(any_truncated, any_lacking)
        inputs, system = split_system(inputs)
        attributes = span.attributes
        return Observation(
            kind=ObservationKind.LLM_CALL,
            dialect=self.name,
            trace_id=span.trace_id,
            span_id=span.span_id,
            start_ns=span.start_ns,
            end_ns=span.end_ns,
            inputs=inputs,
            outputs=outputs,
            system_instructions=system,
            provider=first_str(attributes, "gen_ai.provider.name", "gen_ai.system"),
            model=first_str(attributes, "gen_ai.response.model", "gen_ai.request.model"),
            input_tokens=first_int(
                attributes, "gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens"
            ),
            output_tokens=first_int(
                attributes, "gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens"
            ),
            incomplete_reasons=reasons,
            size_bytes=OBSERVATION_OVERHEAD + messages_size(inputs) + messages_size(outputs),
        )


class GenAIMessageEventLogDecoder(LogDecoder):
    name = "genai_events"

    def decode(self, record: LogView) -> Observation | None:
        event_name = record.event_name or record.attributes.get("event.name")
        if not isinstance(event_name, str):
            return None
        body, truncated = _body(record.body)
        decoded = message_from_event(event_name, body, self.markers)
        if decoded is None:
            return None
        message, is_output = decoded
        message.truncated = truncated
        system = [message.text] if message.role == "system" and message.text else []
        # A system message is never a transcript turn, even when capture left it empty.
        inputs = [] if is_output or message.role == "system" else [message]
        return Observation(
            kind=ObservationKind.MESSAGE_EVENT,
            dialect=self.name,
            trace_id=record.trace_id,
            span_id=record.span_id,
            start_ns=record.time_ns,
            end_ns=record.time_ns,
            inputs=inputs,
            outputs=[message] if is_output else [],
            system_instructions=system,
            provider=first_str(record.attributes, "gen_ai.provider.name", "gen_ai.system"),
            incomplete_reasons=_reasons(truncated, _lacks_content(body)),
            size_bytes=OBSERVATION_OVERHEAD + messages_size([message]),
        )
