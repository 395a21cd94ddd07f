"""Records inside the collector: decoded OTLP items and what the dialect decoders make of them.

These stay inside the collector process (they hold raw content), so they are plain slotted
dataclasses rather than pydantic models: they are built tens of thousands of times a second and
never cross a boundary. `turnwatch.schema.Session` is the boundary record.
"""

from __future__ import annotations

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
    message_attributes: dict[str, list[bytes]] = field(default_factory=dict)
    """Flattened message attributes as their KeyValue encodings, checked but not decoded, by
    key prefix (`otlp_values.MESSAGE_HEADS`); the protobuf receiver leaves them here, out of
    `attributes`, so the flattened dialects decode only what a call adds to the last one."""
    message_run: Any = None
    """The run of input message attributes the span's input begins with (a
    `message_runs.MessageRun`): what the protobuf receiver recognises in the next call's bytes,
    kept alive by whoever holds it."""
    resent_run: Any = None
    """The remembered run the span's bytes began with (the previous call's input, resent): its
    encodings (`items`) come before those under its head in `message_attributes`, which holds
    only what the span added; for GenAI's text, its text comes before the attribute's value."""


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


class DeferredContent:
    """A model call's message content as it arrived, parsed only when its session is assembled.

    Decoders read only what buffering and sampling need when a span arrives; messages are parsed
    when a sampled session is assembled, so unsampled sessions never pay for it. Stateless chat
    APIs resend the whole history on every call: a dialect whose input can be resent history
    names its `channel`, and the sessionizer offers each call the previous call's input of the
    same channel (`drop_known`), so a call that extends it keeps only the new part.
    """

    channel: str = ""
    """Inputs on the same channel may extend one another; "" when they are never compared."""

    held_bytes: int = 0
    """Memory this content holds (measured object sizes), kept current by `drop_known`."""

    history_bytes: int = 0
    """Memory the whole input the channel keeps (`kept_history`) holds beyond this call, once
    `drop_known` kept only the new part."""

    tail_bytes: int = 0
    """Memory this content holds only while its call is the channel's last (what it keeps for
    the next call's decoding, `run`, released when the next call arrives)."""

    run: Any = None
    """What the protobuf receiver keeps for recognising the next call in its bytes (a
    `message_runs.MessageRun`), alive while this call is the channel's last."""

    def release_tail(self) -> None:
        """The channel's next call arrived: let go of what was kept for it."""
        self.run, self.tail_bytes = None, 0

    def fill(self, call: Observation) -> bool:
        """Parse into `call`; True when `call.inputs` holds only what follows the input of the
        call this one extends (`Observation.resends`), False when it holds the whole input."""
        raise NotImplementedError

    def history(self) -> object:
        """This call's whole input, in the form `drop_known` compares (None: nothing to compare)."""
        return None

    def kept_history(self, history: object) -> object:
        """After `drop_known`: this call's whole input as the channel keeps it for the next call,
        `history` (what `history()` returned) or an equal value sharing what the calls hold."""
        return history

    def drop_known(self, previous: DeferredContent | None, history: object) -> bool:
        """Called once, when the call is buffered: if this call's input starts with the whole of
        `history` (the input of `previous`, the channel's last call), keep only the rest and
        return True; otherwise keep it whole and return False. Either way `held_bytes` is then
        complete (a content may leave measuring its input until it knows what it keeps)."""
        return False


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
    """Memory the observation holds (measured object sizes, content included)."""
    content: DeferredContent | None = None
    resends: Observation | None = None
    """The earlier call whose whole input this call's input starts with (set by the
    sessionizer when `content.drop_known` kept only the new part)."""

    def parsed(self) -> Observation:
        """A working copy with the deferred content parsed; this observation is left as it is,
        so every revision of a session is assembled from the same buffered observations."""
        copy = Observation(
            self.kind,
            self.dialect,
            self.trace_id,
            self.span_id,
            self.start_ns,
            self.end_ns,
            list(self.inputs),
            list(self.outputs),
            list(self.system_instructions),
            self.tool,
            self.event_sequence,
            self.agent_level,
            self.provider,
            self.model,
            self.input_tokens,
            self.output_tokens,
            list(self.incomplete_reasons),
            self.size_bytes,
            None,
            None,
        )
        if self.content is not None and self.content.fill(copy):
            copy.resends = self.resends
        return copy


TRACE_MAPPING_SOURCE = "trace_mapping"
"""`Context.key_source` of a span that named no conversation and joined one through its trace."""


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
    resource_attributes: dict[str, str] = field(default_factory=dict)
    """The kept resource attributes (`sessions.resource_attributes`); one dict shared by every
    span of a resource block, never changed once made."""


def first_values(earlier: dict[str, str], later: dict[str, str]) -> dict[str, str]:
    """`earlier` with the keys only `later` has: the first value seen of each attribute wins,
    as it does for the service version. Neither dict is changed (they are shared)."""
    if later.keys() <= earlier.keys():
        return earlier
    if not earlier:
        return later
    return {**later, **earlier}
