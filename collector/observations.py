"""What crosses `turnwatch.observations`: decoded observations and trace links, sealed.

The payload is the collector's own records (`records.py`) in a declared wire form, validated by
pydantic on the way back in, so a sessionizer buffers exactly what an embedded collector would
have buffered. The wire form is spelled out as models rather than derived from the record
dataclasses because the compiled collector (mypyc) erases their field annotations: pydantic sees
every optional field as `type`. `tests/test_routing.py` holds the two field lists equal. Content
a decoder deferred is parsed before sealing: the sampling decision is the sessionizer's now.

Resent history crosses whole: each model call is sealed with its whole input, and the member
keeps only what a call adds to the previous call it holds (`resent_history.ParsedContent`,
compared by equality). A routing collector could send less (only what extends the call of the
conversation it saw last), but it sees a conversation's calls round-robin with the other
collectors, and the member may not hold the call such a record would refer to: the records
reach its partition in any order, a queue-full drop loses one, and a member that takes the
partition over replays only from the committed offset (the earlier revision's calls are gone
once committed). A reference it cannot resolve would be a turn lost, with nothing on a
one-way topic to ask for the rest; the whole input costs bus bytes, never correctness.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError
from turnwatch.collector.records import (
    TRACE_MAPPING_SOURCE,
    Context,
    Message,
    Observation,
    ObservationKind,
    ToolCallPart,
    ToolExecution,
)
from turnwatch.collector.resent_history import defer_parsed_inputs
from turnwatch.collector.sealing import Sealer, Unsealable

from turnwatch.bus.records import ObservationRecord

Route = Literal["conversation", "trace", "link"]


@dataclass(slots=True)
class RoutedObservation:
    """One span's or log record's facts, as `Sessionizer.add` takes them."""

    trace_id: str
    time_ns: int
    context: Context
    observation: Observation | None
    arrival: int
    """Stamped by the routing collector that received it (a hybrid logical clock, as revision
    numbers are): the latest stamp of a session's observations is its revision, so every
    member that builds the session numbers it alike (`revision_clock.from_arrivals`)."""


@dataclass(slots=True)
class TraceLink:
    """Trace `trace_id` belongs to conversation `conversation_key` (a span said so)."""

    trace_id: str
    conversation_key: str


class WireModel(BaseModel):
    # from_attributes: a wire model is built straight from the record it carries.
    model_config = ConfigDict(extra="forbid", from_attributes=True)


class WireToolCall(WireModel):
    id: str | None
    name: str
    arguments: Any

    def record(self) -> ToolCallPart:
        return ToolCallPart(self.id, self.name, self.arguments)


class WireMessage(WireModel):
    role: str
    text: str | None
    tool_calls: list[WireToolCall]
    tool_call_id: str | None
    tool_response: Any
    name: str | None
    finish_reason: str | None
    redacted: bool
    truncated: bool

    def record(self) -> Message:
        return Message(
            role=self.role,
            text=self.text,
            tool_calls=[call.record() for call in self.tool_calls],
            tool_call_id=self.tool_call_id,
            tool_response=self.tool_response,
            name=self.name,
            finish_reason=self.finish_reason,
            redacted=self.redacted,
            truncated=self.truncated,
        )


class WireToolExecution(WireModel):
    call_id: str | None
    name: str
    arguments: Any
    result: Any
    error: str | None

    def record(self) -> ToolExecution:
        return ToolExecution(self.call_id, self.name, self.arguments, self.result, self.error)


class WireObservation(WireModel):
    """An `Observation` without `content` and `resends`, with its content's `channel`: what is
    sealed has its content parsed and holds each call's whole input."""

    kind: ObservationKind
    dialect: str
    trace_id: str
    span_id: str
    start_ns: int
    end_ns: int
    inputs: list[WireMessage]
    outputs: list[WireMessage]
    system_instructions: list[str]
    tool: WireToolExecution | None
    event_sequence: int
    agent_level: bool
    provider: str | None
    model: str | None
    input_tokens: int | None
    output_tokens: int | None
    incomplete_reasons: list[str]
    size_bytes: int
    # The channel of its content (`DeferredContent.channel`): the member compares the calls of
    # a channel for resent history. A default: records sealed by a collector from before it
    # still open (a sessionizer is upgraded first), their inputs kept whole.
    channel: str = ""

    def record(self) -> Observation:
        observation = Observation(
            kind=self.kind,
            dialect=self.dialect,
            trace_id=self.trace_id,
            span_id=self.span_id,
            start_ns=self.start_ns,
            end_ns=self.end_ns,
            inputs=[message.record() for message in self.inputs],
            outputs=[message.record() for message in self.outputs],
            system_instructions=self.system_instructions,
            tool=self.tool.record() if self.tool is not None else None,
            event_sequence=self.event_sequence,
            agent_level=self.agent_level,
            provider=self.provider,
            model=self.model,
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            incomplete_reasons=self.incomplete_reasons,
            size_bytes=self.size_bytes,
        )
        if self.channel:
            defer_parsed_inputs(observation, self.channel)
        return observation


class WireContext(WireModel):
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
    # A default: records sealed by a collector from before resource attributes still open
    # (a sessionizer is upgraded before the collectors that feed it).
    resource_attributes: dict[str, str] = Field(default_factory=dict)

    def record(self) -> Context:
        return Context(**self.model_dump())


class WireRoutedObservation(WireModel):
    trace_id: str
    time_ns: int
    context: WireContext
    observation: WireObservation | None
    # 0: sealed by a routing collector from before arrival stamps (a rolling upgrade): such a
    # session is numbered from the member's close time, as it was then.
    arrival: int = 0

    def record(self) -> RoutedObservation:
        observation = self.observation.record() if self.observation is not None else None
        return RoutedObservation(
            self.trace_id, self.time_ns, self.context.record(), observation, self.arrival
        )


OBSERVATIONS: TypeAdapter[list[WireRoutedObservation]] = TypeAdapter(list[WireRoutedObservation])
LINKS: TypeAdapter[list[TraceLink]] = TypeAdapter(list[TraceLink])


class BadObservations(Exception):
    """A record on the observations topic that this deployment cannot read; the reason is
    one of a fixed set (`unsealable`, `invalid`)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def resolve(item: RoutedObservation, conversation_key: str) -> None:
    """A span without a key joins the conversation its trace was mapped to."""
    item.context.conversation_key = conversation_key
    item.context.key_source = TRACE_MAPPING_SOURCE


class ObservationCodec:
    def __init__(self, sealer: Sealer) -> None:
        self.sealer = sealer

    def route_key(self, route: Route, value: str) -> str:
        # A link travels to its trace's owner, so it is keyed like the trace's observations.
        return self.sealer.route_key("trace" if route == "link" else route, value)

    def seal_observations(self, route: Route, items: list[RoutedObservation]) -> ObservationRecord:
        channels = []
        for item in items:
            observation = item.observation
            content = observation.content if observation is not None else None
            channels.append(content.channel if content is not None else "")
            if observation is not None and content is not None:
                # A routing collector never compares calls (`drop_known` is the sessionizer's),
                # so the parsed copy holds each call's whole input and no `resends` link.
                item.observation = observation.parsed()
        wire = OBSERVATIONS.validate_python(items, from_attributes=True)
        for routed, channel in zip(wire, channels, strict=True):
            if routed.observation is not None:
                routed.observation.channel = channel
        return self._seal(route, OBSERVATIONS.dump_json(wire))

    def seal_links(self, links: list[TraceLink]) -> ObservationRecord:
        return self._seal("link", LINKS.dump_json(links))

    def _seal(self, route: Route, payload: bytes) -> ObservationRecord:
        sealed = self.sealer.seal(payload, route.encode())
        return ObservationRecord(route=route, record_id=uuid.uuid4().hex, sealed=sealed)

    def open_observations(self, record: ObservationRecord) -> list[RoutedObservation]:
        return [item.record() for item in self._open(record, OBSERVATIONS)]

    def open_links(self, record: ObservationRecord) -> list[TraceLink]:
        return self._open(record, LINKS)

    def _open(self, record: ObservationRecord, adapter: TypeAdapter):
        try:
            payload = self.sealer.open(record.sealed, record.route.encode())
        except Unsealable:
            raise BadObservations("unsealable") from None
        try:
            return adapter.validate_json(payload)
        except ValidationError:
            raise BadObservations("invalid") from None
