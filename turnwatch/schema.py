"""Wire records: what flows between turnwatch's stages and over the bus.

A `Session` is one conversation (or one revision of it) rebuilt from OTel spans and log records.
Every record carries `schema_version`; a consumer rejects versions it does not know instead of
guessing. Text fields hold raw content only inside the collector process: the de-identification
stage replaces them before a session is handed to anything that leaves the process.
"""

from __future__ import annotations

import re
from datetime import datetime
from enum import StrEnum
from typing import Any, ClassVar, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    ValidationError,
    model_serializer,
)

SCHEMA_VERSION: Literal[1] = 1
MAX_RESOURCE_ATTRIBUTES = 32
"""Resource attributes a session carries at most (`sessions.resource_attributes` lists them)."""
RESOURCE_ATTRIBUTE_KEY = r"[A-Za-z0-9_\-]+(\.[A-Za-z0-9_\-]+)+"
"""A resource attribute key a session can carry and a selection can name: namespaced, as OTel's
semantic conventions are (`deployment.environment`), so a selection tells it from a filter."""
MAX_RESOURCE_ATTRIBUTE_KEY_CHARS = 128
ALWAYS_KEPT_RESOURCE_ATTRIBUTES = frozenset({"service.name", "service.version"})
"""Every session keeps these already (`Session.service`, `Provenance.service_version`)."""


def resource_attribute_key(key: str) -> str:
    """`key` when a session can carry it as a resource attribute; ValueError saying why not."""
    if len(key) > MAX_RESOURCE_ATTRIBUTE_KEY_CHARS:
        raise ValueError(f"{key[:40]!r}...: over {MAX_RESOURCE_ATTRIBUTE_KEY_CHARS} characters")
    if not re.fullmatch(RESOURCE_ATTRIBUTE_KEY, key):
        raise ValueError(
            f"{key!r} is not a resource attribute key (namespaced letters, digits, '_' and '-' "
            "joined by dots, such as deployment.environment)"
        )
    return key


JsonValue = Any
"""A JSON-compatible value (str, int, float, bool, None, list, dict) as decoded from OTLP."""


class WireModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=False)


def first_problem(exc: ValidationError) -> str:
    """The first validation error as `field.path: message`, for one-line error messages."""
    error = exc.errors(include_input=False)[0]
    where = ".".join(str(part) for part in error["loc"]) or "(root)"
    return f"{where}: {error['msg']}"


class SparseModel(WireModel):
    """A wire model whose unset (None) fields are left out of its JSON, except those named in
    `written_when_none`; a missing field reads back as None."""

    written_when_none: ClassVar[frozenset[str]] = frozenset()

    @model_serializer(mode="wrap")
    def _without_none(self, serialize: SerializerFunctionWrapHandler) -> dict[str, Any]:
        keep = self.written_when_none
        return {
            key: value for key, value in serialize(self).items() if value is not None or key in keep
        }


class Role(StrEnum):
    SYSTEM = "system"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"


class TokenUsage(WireModel):
    input_tokens: int | None = None
    output_tokens: int | None = None


class ToolCall(WireModel):
    """One tool invocation requested by the assistant, joined with its execution and result."""

    id: str | None = None
    name: str
    arguments: JsonValue = None
    result: JsonValue = None
    error: str | None = None
    started_at: datetime | None = None
    duration_ms: float | None = None


class Turn(WireModel):
    index: int
    role: Role
    text: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    tool_call_id: str | None = Field(
        default=None, description="For a tool turn whose result matched no tool call: the call id."
    )
    name: str | None = None
    started_at: datetime | None = None
    latency_ms: float | None = Field(default=None, description="Model call duration (assistant).")
    usage: TokenUsage | None = None
    model: str | None = None
    finish_reason: str | None = None
    redacted: bool = Field(
        default=False, description="The instrumentation redacted or filtered this turn's content."
    )
    truncated: bool = Field(default=False, description="Content was cut off by the emitter.")
    trace_id: str | None = None


class CloseReason(StrEnum):
    IDLE = "idle"
    END_MARKER = "end_marker"
    TURN_CAP = "turn_cap"
    BYTE_CAP = "byte_cap"
    EVICTED = "evicted"
    SHUTDOWN = "shutdown"


class SamplingReason(StrEnum):
    RATE = "rate"
    NOT_SELECTED = "not_selected"
    FORCED_ERROR = "forced_error"
    FORCED_TOOL_ERROR = "forced_tool_error"
    FORCED_ATTRIBUTE = "forced_attribute"


class SamplingDecision(WireModel):
    sampled: bool
    reason: SamplingReason
    rate: float = Field(ge=0.0, le=1.0)
    hash_fraction: float = Field(
        ge=0.0, lt=1.0, description="Consistent hash of the conversation key mapped to [0, 1)."
    )


class Provenance(WireModel):
    providers: list[str] = Field(default_factory=list)
    models: list[str] = Field(default_factory=list)
    service_version: str | None = None
    agent_name: str | None = None
    agent_version: str | None = None
    dialects: list[str] = Field(default_factory=list, description="Decoders that produced turns.")
    instrumentation_scopes: list[str] = Field(default_factory=list)
    resource_attributes: dict[str, str] = Field(
        default_factory=dict,
        max_length=MAX_RESOURCE_ATTRIBUTES,
        description="The OTLP resource attributes the collector keeps (`sessions."
        "resource_attributes`), as text; identifying ones as keyed ids once de-identified.",
    )

    @model_serializer(mode="wrap")
    def _attributes_when_kept(self, serialize: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # Written only when there are some: a reader from before the field (which forbids
        # unknown keys) still reads every session that carries none.
        written = serialize(self)
        if not self.resource_attributes:
            written.pop("resource_attributes", None)
        return written


class Session(WireModel):
    schema_version: Literal[1] = SCHEMA_VERSION
    session_id: str = Field(description="Stable id derived from the conversation key.")
    revision: int = Field(
        ge=1,
        description="Grows each time the conversation is re-emitted, across restarts too (the "
        "close time in ms times 1024 plus a counter); not consecutive.",
    )
    conversation_key: str
    key_source: str = Field(description="Attribute the key came from, or 'trace_id'.")
    service: str
    user_id: str | None = Field(
        default=None, description="End-user id; a keyed pseudonym once de-identified."
    )
    deidentified: bool = False
    provenance: Provenance = Field(default_factory=Provenance)
    trace_ids: list[str] = Field(default_factory=list)
    started_at: datetime
    ended_at: datetime
    system_instructions: list[str] = Field(default_factory=list)
    turns: list[Turn] = Field(default_factory=list)
    close_reason: CloseReason
    incomplete: bool = False
    incomplete_reasons: list[str] = Field(default_factory=list)
    truncated: bool = Field(
        default=False,
        description="Caps cut this session, or an earlier revision already emitted its head.",
    )
    dropped_spans: int = 0
    error_spans: int = 0
    sampling: SamplingDecision
