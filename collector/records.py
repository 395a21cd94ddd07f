"""Records inside the collector: decoded OTLP items and what the dialect decoders make of them.

These stay inside the collector process (they hold raw content), so they are plain slotted
dataclasses rather than pydantic models: they are built tens of thousands of times a second and
never cross a boundary. `turnwatch.schema.Session` is the boundary record.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

Attributes = dict[str, Any]

STATUS_ERROR = 2


@dataclass(slots=True)
class SpanEvent:
    name: str
    time_ns: int
    attributes: Attributes


@dataclass(slots=True)
class SpanView:
    """One OTLP span with its attribute values already turned into Python values."""

    trace_id: str
    span_id: str
    parent_span_id: str
    name: str
    kind: int
    start_ns: int
    end_ns: int
    attributes: Attributes
    events: list[SpanEvent]
    status_code: int
    resource: Attributes
    scope_name: str
    dropped_attributes: int = 0


@dataclass(slots=True)
class LogView:
    """One OTLP log record (GenAI events arrive as these)."""

    time_ns: int
    trace_id: str
    span_id: str
    event_name: str
    body: Any
    attributes: Attributes
    resource: Attributes
    scope_name: str
    dropped_attributes: int = 0


@dataclass(slots=True)
class ToolCallPart:
    id: str | None
    name: str
    arguments: Any


@dataclass(slots=True)
class Message:
    """A chat message in the canonical shape every dialect is normalised to."""

    role: str
    text: str | None = None
    tool_calls: list[ToolCallPart] = field(default_factory=list)
    tool_call_id: str | None = None
    tool_response: Any = None
    name: str | None = None
    finish_reason: str | None = None
    redacted: bool = False
    truncated: bool = False

    def identity(self) -> tuple[Any, ...]:
        """What makes two copies of a resent message the same message."""
        calls = tuple([(call.id, call.name) for call in self.tool_calls]) if self.tool_calls else ()
        return (self.role, self.text, calls, self.tool_call_id)


class ObservationKind(Enum):
    LLM_CALL = "llm_call"
    TOOL_EXECUTION = "tool_execution"
    MESSAGE_EVENT = "message_event"
    CONTEXT = "context"


@dataclass(slots=True)
class ToolExecution:
    call_id: str | None
    name: str
    arguments: Any
    result: Any
    error: str | None


@dataclass(slots=True)
class Observation:
    """What one span or log record tells about a conversation.

    An LLM call carries the messages sent and received; a tool execution carries a tool's result;
    a message event is one legacy per-message event to be grouped with its siblings by span id; a
    context observation only carries identity, errors or an end marker.
    """

    kind: ObservationKind
    dialect: str
    trace_id: str
    span_id: str
    start_ns: int
    end_ns: int
    inputs: list[Message] = field(default_factory=list)
    outputs: list[Message] = field(default_factory=list)
    system_instructions: list[str] = field(default_factory=list)
    tool: ToolExecution | None = None
    event_sequence: int = 0
    agent_level: bool = False
    provider: str | None = None
    model: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    incomplete_reasons: list[str] = field(default_factory=list)
    size_bytes: int = 0
    deferred_content: Callable[[Observation], None] | None = None

    def materialize(self) -> None:
        """Parse the message content a decoder deferred.

        Decoders read only what buffering and sampling need when a span arrives; messages are
        parsed when a sampled session is assembled, so unsampled sessions never pay for it.
        """
        if self.deferred_content is not None:
            fill, self.deferred_content = self.deferred_content, None
            fill(self)


@dataclass(slots=True)
class Context:
    """Identity and lifecycle facts read from a span or log record, whatever its dialect."""

    service: str
    conversation_key: str | None
    key_source: str | None
    user_id: str | None
    is_error: bool
    is_end_marker: bool
    force_attribute: str | None
    service_version: str | None
    agent_name: str | None
    agent_version: str | None
    scope_name: str
    dropped_attributes: int
