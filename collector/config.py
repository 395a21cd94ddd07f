"""Configuration blocks of the collector stage: receivers, conversation keys, sessions,
sampling, handoff, decoders, routing and the write-ahead log (`otlp:`, `conversation_key:`,
`sessions:`, `sampling:`, `handoff:`, `decoders:`, `routing:`, `wal:` in the YAML file; the
application's Settings composes them).

`CollectorConfig` is what the pipeline receives: those blocks and nothing else of Settings.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, field_validator, model_validator
from turnwatch.collector.wal.config import WalConfig

from turnwatch.schema import (
    ALWAYS_KEPT_RESOURCE_ATTRIBUTES,
    MAX_RESOURCE_ATTRIBUTES,
    resource_attribute_key,
)
from turnwatch.secret_files import token_from
from turnwatch.section import Section
from turnwatch.serving import ConnectionLimits

MiB = 1024 * 1024


class OtlpConfig(ConnectionLimits):
    host: str = Field(default="127.0.0.1", description="Address the OTLP receivers bind to.")
    http_port: int = Field(default=4318, ge=0, le=65535, description="OTLP/HTTP; 0 picks one.")
    grpc_port: int = Field(default=4317, ge=0, le=65535, description="OTLP/gRPC; 0 picks one.")
    grpc_enabled: bool = True
    max_request_bytes: int = Field(
        default=16 * MiB, gt=0, description="Cap on the request body as sent (compressed)."
    )
    max_decompressed_bytes: int = Field(
        default=64 * MiB, gt=0, description="Cap on the body after decompression."
    )
    max_attribute_bytes: int = Field(
        default=1 * MiB, gt=0, description="A span with a longer attribute value is rejected."
    )
    auth_token: SecretStr | None = Field(
        default=None, description="When set, requests need `Authorization: Bearer <token>`."
    )
    auth_token_file: Path | None = Field(
        default=None, description="File holding `auth_token` (a mounted secret)."
    )
    retry_after_seconds: int = Field(
        default=2, ge=1, le=5, description="Retry-After sent with 429/503 (clients give up >10 s)."
    )
    max_spans_per_request: int = Field(
        default=10_000, gt=0, description="A trace request with more spans is refused (413)."
    )
    max_log_records_per_request: int = Field(
        default=10_000, gt=0, description="A logs request with more records is refused (413)."
    )
    max_values_per_request: int = Field(
        default=500_000,
        gt=0,
        description="Items, attributes, events, links and array/kvlist elements in one request; "
        "past it the request is refused (413). Bounds decoding memory, as spans alone do not.",
    )
    decode_workers: int = Field(
        default=2,
        ge=1,
        le=32,
        description="Threads that decompress and decode requests, off the event loop.",
    )
    max_concurrent_requests: int = Field(
        default=16,
        ge=1,
        description="Export requests read and decoded at once (HTTP and gRPC together); past "
        "it the answer is 503 / UNAVAILABLE with Retry-After.",
    )
    body_timeout_seconds: float = Field(
        default=30.0,
        gt=0,
        description="Time for a request's whole body to arrive; past it the answer is 400 and "
        "the connection is closed.",
    )
    grpc_max_concurrent_streams: int = Field(
        default=16, ge=1, description="Concurrent gRPC calls on one connection."
    )
    grpc_keepalive_seconds: float = Field(
        default=60.0, gt=0, description="The gRPC server pings a connection idle this long."
    )
    grpc_keepalive_timeout_seconds: float = Field(
        default=20.0, gt=0, description="A connection whose ping is not answered in this is closed."
    )

    @model_validator(mode="after")
    def _token_file(self) -> OtlpConfig:
        self.auth_token = token_from(self.auth_token, self.auth_token_file, "auth_token")
        return self


class ConversationKeyConfig(Section):
    priority: list[str] = Field(
        default=[
            "gen_ai.conversation.id",
            "session.id",
            "traceloop.association.properties.session_id",
            "ai.telemetry.metadata.sessionId",
        ],
        min_length=1,
        description="Attributes tried in order; the trace id is the fallback.",
    )
    custom_attribute: str | None = Field(
        default=None, description="An extra attribute tried after the priority list."
    )
    user_attributes: list[str] = Field(
        default=[
            "user.id",
            "enduser.id",
            "enduser.pseudo.id",
            "traceloop.association.properties.user_id",
            "ai.telemetry.metadata.userId",
        ]
    )


class SessionConfig(Section):
    idle_timeout_seconds: float = Field(default=60.0, gt=0)
    max_turns: int = Field(default=400, gt=0, description="Close (truncated) past this many turns.")
    max_session_bytes: int = Field(default=4 * MiB, gt=0)
    max_open_sessions: int = Field(default=20_000, gt=0)
    max_buffered_bytes: int = Field(default=512 * MiB, gt=0)
    reopen_window_seconds: float = Field(
        default=3600.0,
        ge=0,
        description="A late span within this window re-emits the whole conversation as a new "
        "revision; after it, the late spans form a new revision on their own.",
    )
    max_reopen_bytes: int = Field(
        default=128 * MiB,
        ge=0,
        description="Content of closed sessions kept for the reopen window (part of "
        "max_buffered_bytes); past it the oldest closed session's content is dropped first.",
    )
    max_remembered_sessions: int = Field(
        default=50_000,
        ge=0,
        description="Closed conversation keys remembered, so a late span after its content was "
        "dropped opens a revision flagged truncated.",
    )
    end_marker_attributes: dict[str, str] = Field(
        default={"turnwatch.session.end": "true"},
        description="Attribute values that close a session at once.",
    )
    end_marker_events: list[str] = Field(default=["session.end"])
    sweep_interval_seconds: float = Field(default=1.0, gt=0)
    resource_attributes: list[str] = Field(
        # Deployment facts only: which copy of the chatbot ran, never who or which machine.
        # Instance, host and pod attributes identify machines and custom ones can hold user
        # ids; listing one is the operator's choice, and `deid.keyed_resource_attributes`
        # then turns its value into a keyed id.
        default=["deployment.environment", "deployment.environment.name", "service.namespace"],
        max_length=MAX_RESOURCE_ATTRIBUTES,
        description="OTLP resource attributes kept on every session (and selectable in the "
        "session store); service.name and service.version are always kept.",
    )
    max_resource_attribute_chars: int = Field(
        default=128, gt=0, le=1024, description="A longer resource attribute value is cut here."
    )

    @field_validator("resource_attributes")
    @classmethod
    def _namespaced_keys(cls, keys: list[str]) -> list[str]:
        for key in keys:
            resource_attribute_key(key)
            if key in ALWAYS_KEPT_RESOURCE_ATTRIBUTES:
                raise ValueError(f"{key} is kept on every session already; leave it out")
        return list(dict.fromkeys(keys))


class SamplingConfig(Section):
    rate: float = Field(default=1.0, ge=0.0, le=1.0)
    force_on_error: bool = True
    force_on_tool_error: bool = True
    force_attributes: dict[str, list[str]] = Field(
        default={"user.feedback": ["negative", "thumbs_down"]},
        description="Attribute values that force a session into the sample.",
    )


class HandoffConfig(Section):
    queue_size: int = Field(
        default=2_000, gt=0, description="Closed sessions awaiting the next stage."
    )
    high_watermark: float = Field(
        default=0.8, gt=0, le=1, description="Fraction of the queue at which OTLP answers 503."
    )
    shutdown_timeout_seconds: float = Field(
        default=10.0,
        gt=0,
        description="At shutdown: time for the next stages to take every closed session; what "
        "is left then is lost and counted (or, with the write-ahead log, kept for the next start).",
    )


class DecoderConfig(Section):
    dialects: list[
        Literal["genai", "genai_events", "openinference", "openllmetry", "vercel_ai"]
    ] = Field(
        default=["genai", "genai_events", "openinference", "openllmetry", "vercel_ai"],
        min_length=1,
        description="Span decoders tried in order; the first that finds messages wins.",
    )
    redaction_markers: list[str] = Field(default=["__REDACTED__", "FILTERED", "<redacted>"])


class RoutingConfig(Section):
    """The distributed layout (`routing:`): collectors route, sessionizers sessionize."""

    mode: Literal["sessionize", "route"] = Field(
        default="sessionize",
        description="`sessionize`: this collector builds sessions itself (one process); "
        "`route`: it seals decoded observations onto turnwatch.observations for the "
        "sessionizer role (needs Kafka and a shared deid secret).",
    )
    queue_size: int = Field(
        default=10_000, gt=0, description="Sealed records awaiting the bus (route mode)."
    )
    high_watermark: float = Field(
        default=0.8, gt=0, le=1, description="Fraction of the queue at which OTLP answers 503."
    )
    max_traces: int = Field(
        default=100_000, gt=0, description="Trace -> conversation mappings remembered."
    )
    max_pending_traces: int = Field(
        default=20_000,
        gt=0,
        description="Sessionizer: traces whose spans wait for a link to their conversation.",
    )
    end_marker_grace_seconds: float = Field(
        default=2.0,
        ge=0,
        description="Sessionizer: an end marker closes its conversation once no other span of "
        "it has come for this long (at most the idle timeout), not at once: the conversation's "
        "last spans, routed through other collectors, may arrive after it. 0: at once.",
    )


class CollectorConfig(Section):
    """The collector pipeline's view of the configuration (built by the application)."""

    service_fallback: str = "unknown_service"
    conversation_key: ConversationKeyConfig = Field(default_factory=ConversationKeyConfig)
    sessions: SessionConfig = Field(default_factory=SessionConfig)
    sampling: SamplingConfig = Field(default_factory=SamplingConfig)
    handoff: HandoffConfig = Field(default_factory=HandoffConfig)
    decoders: DecoderConfig = Field(default_factory=DecoderConfig)
    wal: WalConfig = Field(default_factory=WalConfig)
    routing: RoutingConfig = Field(default_factory=RoutingConfig)
