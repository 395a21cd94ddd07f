"""Configuration: one YAML file plus `TURNWATCH_*` environment variables.

Precedence, highest first: command-line flags (applied by the CLI), environment variables
(`TURNWATCH_OTLP__HTTP_PORT=4318`; nested fields joined with `__`), the YAML file, defaults.
Every field is documented in README's configuration reference; unknown keys are errors so a typo
never silently falls back to a default.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import Field, SecretStr, TypeAdapter, ValidationError, field_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    SettingsError,
)

from collector.deid.config import DeidConfig
from exporters.config import ExporterConfig
from exporters.regressions.config import RegressionConfig
from scorers.config import ScorerConfig
from turnwatch.bus.config import BusConfig
from turnwatch.section import Section

MiB = 1024 * 1024


class ConfigError(Exception):
    """The configuration is invalid; the message names the offending field."""


class OtlpConfig(Section):
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
    retry_after_seconds: int = Field(
        default=2, ge=1, le=5, description="Retry-After sent with 429/503 (clients give up >10 s)."
    )


class OpsConfig(Section):
    host: str = "127.0.0.1"
    port: int = Field(default=9464, ge=0, le=65535)


class ConversationKeyConfig(Section):
    priority: list[str] = Field(
        default=[
            "gen_ai.conversation.id",
            "session.id",
            "traceloop.association.properties.session_id",
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
    max_remembered_sessions: int = Field(default=50_000, ge=0)
    end_marker_attributes: dict[str, str] = Field(
        default={"turnwatch.session.end": "true"},
        description="Attribute values that close a session at once.",
    )
    end_marker_events: list[str] = Field(default=["session.end"])
    sweep_interval_seconds: float = Field(default=1.0, gt=0)


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


class DecoderConfig(Section):
    dialects: list[Literal["genai", "genai_events", "openinference", "openllmetry"]] = Field(
        default=["genai", "genai_events", "openinference", "openllmetry"],
        min_length=1,
        description="Span decoders tried in order; the first that finds messages wins.",
    )
    redaction_markers: list[str] = Field(default=["__REDACTED__", "FILTERED", "<redacted>"])


class LogConfig(Section):
    level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="TURNWATCH_", env_nested_delimiter="__", extra="forbid"
    )

    mode: Literal["embedded", "production"] = "embedded"
    service_fallback: str = Field(
        default="unknown_service", description="Service name when a resource has none."
    )
    otlp: OtlpConfig = Field(default_factory=OtlpConfig)
    ops: OpsConfig = Field(default_factory=OpsConfig)
    conversation_key: ConversationKeyConfig = Field(default_factory=ConversationKeyConfig)
    sessions: SessionConfig = Field(default_factory=SessionConfig)
    sampling: SamplingConfig = Field(default_factory=SamplingConfig)
    handoff: HandoffConfig = Field(default_factory=HandoffConfig)
    decoders: DecoderConfig = Field(default_factory=DecoderConfig)
    deid: DeidConfig = Field(default_factory=DeidConfig)
    bus: BusConfig = Field(default_factory=BusConfig)
    scorers: ScorerConfig = Field(default_factory=ScorerConfig)
    regressions: RegressionConfig = Field(default_factory=RegressionConfig)
    exporter: ExporterConfig = Field(default_factory=ExporterConfig)
    data_dir: Path = Field(
        default=Path("turnwatch-data"),
        description="Where turnwatch keeps state: the generated pseudonym key, quarantine.",
    )
    log: LogConfig = Field(default_factory=LogConfig)

    @field_validator("service_fallback")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return value

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # init kwargs carry the YAML file's content, so env vars must rank above them.
        return (env_settings, init_settings)


def _format_validation_error(error: ValidationError, origin: str, prefix: str = "") -> str:
    lines = [f"invalid configuration ({origin}):"]
    for item in error.errors():
        field = prefix + ".".join(str(part) for part in item["loc"]) or "<root>"
        lines.append(f"  {field}: {item['msg']}")
    return "\n".join(lines)


def load_settings(
    config_path: Path | None = None, overrides: dict[str, Any] | None = None
) -> Settings:
    """Build settings from a YAML file, the environment and CLI overrides; raise ConfigError.

    `overrides` maps `section.field` (e.g. `otlp.http_port`) to a value and beats everything else.
    """
    data: dict[str, Any] = {}
    origin = "environment"
    if config_path is not None:
        origin = f"{config_path} and environment"
        try:
            loaded = yaml.safe_load(config_path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise ConfigError(f"cannot read config file {config_path}: {exc.strerror}") from exc
        except UnicodeDecodeError as exc:
            # A binary or mis-encoded file must stop start-up with a message, not a traceback.
            raise ConfigError(
                f"config file {config_path} is not UTF-8 text (byte {exc.start})"
            ) from exc
        except yaml.YAMLError as exc:
            raise ConfigError(f"config file {config_path} is not valid YAML: {exc}") from exc
        if loaded is None:
            loaded = {}
        if not isinstance(loaded, dict):
            raise ConfigError(f"config file {config_path} must hold a mapping at the top level")
        # YAML allows keys such as `1:` or `true:`; they cannot be keyword arguments below.
        for key in loaded:
            if not isinstance(key, str):
                raise ConfigError(f"config file {config_path}: {key!r}: not a field name")
        data = loaded
    try:
        settings = Settings(**data)
    except ValidationError as exc:
        raise ConfigError(_format_validation_error(exc, origin)) from exc
    except SettingsError as exc:
        # e.g. TURNWATCH_SESSIONS='{bad json': pydantic-settings names the field in its message.
        raise ConfigError(f"invalid configuration ({origin}): {exc}") from exc
    if not overrides:
        return settings
    # Overrides are validated per section: validating a whole Settings again would re-read the
    # environment on top of them, and flags must beat environment variables.
    by_section: dict[str, dict[str, Any]] = {}
    updates: dict[str, Any] = {}
    for dotted, value in overrides.items():
        section, dot, name = dotted.partition(".")
        if dot:
            by_section.setdefault(section, {})[name] = value
            continue
        field = Settings.model_fields.get(dotted)
        if field is None or isinstance(getattr(settings, dotted), Section):
            raise ConfigError(f"invalid configuration (command line): {dotted}: not a setting")
        try:
            updates[dotted] = TypeAdapter(field.annotation).validate_python(value)
        except ValidationError as exc:
            message = _format_validation_error(exc, "command line", prefix=dotted)
            raise ConfigError(message) from exc
    for section, values in by_section.items():
        current = getattr(settings, section, None)
        if not isinstance(current, Section):
            raise ConfigError(f"invalid configuration (command line): {section}: not a section")
        try:
            updates[section] = type(current).model_validate({**current.model_dump(), **values})
        except ValidationError as exc:
            message = _format_validation_error(exc, "command line", prefix=f"{section}.")
            raise ConfigError(message) from exc
    return settings.model_copy(update=updates)
