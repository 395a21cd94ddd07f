"""What every dialect decoder shares: the decoder interfaces and message normalisation."""

from __future__ import annotations

import sys
from abc import ABC, abstractmethod
from typing import Any

import orjson
from turnwatch.collector.records import (
    LogView,
    Message,
    Observation,
    ObservationKind,
    SpanView,
    ToolCallPart,
    ToolExecution,
)

ROLE_ALIASES = {
    "system": "system",
    "developer": "system",
    "user": "user",
    "human": "user",
    "assistant": "assistant",
    "model": "assistant",
    "ai": "assistant",
    "tool": "tool",
    "function": "tool",
    "ipython": "tool",
}

MARKER_SCAN_LENGTH = 64
"""Redaction markers are short; longer content is never compared against them."""

INFERENCE_OPERATIONS = frozenset({"chat", "generate_content", "text_completion", "invoke_agent"})

# What buffering a span costs beyond the values it keeps, measured with tracemalloc
# (tests/test_session_memory.py holds the accounting to it): the Observation with its four lists,
# its span id, and the object holding deferred content.
OBSERVATION_OVERHEAD = 480
CONTENT_OVERHEAD = 120
MESSAGE_OVERHEAD = 200
TOOL_OVERHEAD = 160


class SpanDecoder(ABC):
    """Turns one span of its dialect into an Observation; returns None for other spans."""

    name: str

    def __init__(self, redaction_markers: list[str]) -> None:
        self.markers = frozenset(redaction_markers)

    @abstractmethod
    def decode(self, span: SpanView) -> Observation | None: ...


class LogDecoder(ABC):
    """Turns one log record of its dialect into an Observation; returns None for others."""

    name: str

    def __init__(self, redaction_markers: list[str]) -> None:
        self.markers = frozenset(redaction_markers)

    @abstractmethod
    def decode(self, record: LogView) -> Observation | None: ...


def normalise_role(raw: Any) -> str | None:
    if not isinstance(raw, str):
        return None
    return ROLE_ALIASES.get(raw) or ROLE_ALIASES.get(raw.strip().lower())


def split_system(messages: list[Message]) -> tuple[list[Message], list[str]]:
    """System messages describe the bot, not the conversation: keep them apart."""
    for message in messages:
        if message.role == "system":
            break
    else:
        return messages, []  # the usual case: nothing to split, nothing to copy
    system = [m.text for m in messages if m.role == "system" and m.text]
    return [m for m in messages if m.role != "system"], system


def salvage_json(text: str) -> tuple[Any, bool]:
    """Parse JSON; if the emitter cut it off (attribute length limits), close what is open.

    Returns (value, truncated). A value that cannot be salvaged comes back as (None, True).
    """
    try:
        return orjson.loads(text), False
    except orjson.JSONDecodeError:
        pass
    stack: list[str] = []
    cut_points: list[tuple[int, tuple[str, ...]]] = []
    # Where the open string's last two escapes start: a cut inside `\u00e9` (Python's
    # json.dumps escapes all non-ASCII text) or after a lone high surrogate is backed off.
    escapes: list[int] = []
    in_string = False
    escaped = False
    for position, char in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
                escapes = [*escapes[-1:], position]
            elif char == '"':
                in_string = False
            continue
        if char == '"':
            in_string = True
            escapes = []
        elif char in "[{":
            stack.append("]" if char == "[" else "}")
        elif char in "]}":
            if not stack:
                return None, True
            stack.pop()
            cut_points.append((position + 1, tuple(stack)))
        elif char == ",":
            cut_points.append((position, tuple(stack)))
    candidates = []
    if in_string:
        closing = '"' + "".join(reversed(stack))
        for end in (len(text), *reversed(escapes)):
            candidates.append(text[:end] + closing)
    candidates.append(text + "".join(reversed(stack)))
    for position, open_brackets in reversed(cut_points[-8:]):
        candidates.append(text[:position] + "".join(reversed(open_brackets)))
    for candidate in candidates:
        try:
            return orjson.loads(candidate), True
        except orjson.JSONDecodeError:
            continue
    return None, True


def maybe_json(value: Any) -> Any:
    """Tool arguments and results arrive as objects or as JSON strings; prefer the object."""
    if isinstance(value, str) and value[:1] in ("{", "["):
        try:
            return orjson.loads(value)
        except orjson.JSONDecodeError:
            return value
    return value


def text_or_marker(raw: Any, markers: frozenset[str]) -> tuple[str | None, bool]:
    """Return (text, redacted) for a content value, recognising redaction markers."""
    if raw is None:
        return None, False
    if not isinstance(raw, str):
        raw = orjson.dumps(raw).decode()
    if not raw or raw.isspace():
        # Emitters write `content: ""` for a tool-call-only answer and omit it when the same
        # message is resent as history; both must be the same message to de-duplicate.
        return None, False
    if len(raw) <= MARKER_SCAN_LENGTH and raw.strip() in markers:
        return None, True
    return raw, False


def tool_call_part(call_id: Any, name: Any, arguments: Any) -> ToolCallPart:
    return ToolCallPart(
        id=str(call_id) if call_id not in (None, "") else None,
        name=str(name) if name else "unknown",
        arguments=maybe_json(arguments),
    )


def mark_truncated(messages: list[Message]) -> None:
    if messages:
        messages[-1].truncated = True


def held_size(value: object) -> int:
    """Bytes a decoded attribute value (or an undecoded encoding) occupies: its own size and, for
    containers, their items'."""
    if isinstance(value, str | bytes):
        return sys.getsizeof(value)
    if isinstance(value, list | tuple):
        return sys.getsizeof(value) + sum([held_size(item) for item in value])
    if isinstance(value, dict):
        return sys.getsizeof(value) + sum(
            [held_size(key) + held_size(item) for key, item in value.items()]
        )
    if value is None or isinstance(value, bool):
        return 0
    return 32


def messages_size(messages: list[Message]) -> int:
    """Bytes parsed messages occupy (decoders that parse at once keep these)."""
    size = 0
    for message in messages:
        size += MESSAGE_OVERHEAD + held_size(message.text)
        for call in message.tool_calls:
            size += TOOL_OVERHEAD + held_size(call.id) + held_size(call.arguments)
        size += held_size(message.tool_response)
    return size


def first_str(attributes: dict[str, Any], *keys: str) -> str | None:
    for key in keys:
        value = attributes.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def first_int(attributes: dict[str, Any], *keys: str) -> int | None:
    for key in keys:
        value = attributes.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, str) and value.isascii() and value.isdecimal():
            return int(value)
    return None


def tool_execution(
    span: SpanView,
    dialect: str,
    call_id: str | None,
    name: str,
    arguments: Any,
    result: Any,
    error: str | None,
) -> Observation:
    """A span that ran a tool: what it was asked and what it returned (JSON strings parsed)."""
    arguments = maybe_json(arguments)
    result = maybe_json(result)
    return Observation(
        kind=ObservationKind.TOOL_EXECUTION,
        dialect=dialect,
        trace_id=span.trace_id,
        span_id=span.span_id,
        start_ns=span.start_ns,
        end_ns=span.end_ns,
        tool=ToolExecution(
            call_id=call_id, name=name, arguments=arguments, result=result, error=error
        ),
        size_bytes=OBSERVATION_OVERHEAD
        + TOOL_OVERHEAD
        + held_size(call_id)
        + held_size(arguments)
        + held_size(result),
    )
