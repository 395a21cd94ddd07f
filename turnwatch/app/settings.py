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
from pydantic import Field, TypeAdapter, ValidationError, field_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    SettingsError,
)

from turnwatch.bus.config import BusConfig
from turnwatch.collector.config import (
    CollectorConfig,
    ConversationKeyConfig,
    DecoderConfig,
    HandoffConfig,
    OtlpConfig,
    RoutingConfig,
    SamplingConfig,
    SessionConfig,
)
from turnwatch.collector.deid.config import DeidConfig
from turnwatch.collector.wal.config import WalConfig
from turnwatch.exporters.config import ExporterConfig
from turnwatch.exporters.regressions.config import RegressionConfig
from turnwatch.exporters.sessions.config import CalibrationConfig, SessionStoreConfig
from turnwatch.scorers.config import ScorerConfig
from turnwatch.section import Section
from turnwatch.serving import ConnectionLimits


class ConfigError(Exception):
    """The configuration is invalid; the message names the offending field."""


class OpsConfig(ConnectionLimits):
    host: str = "127.0.0.1"
    port: int = Field(default=9464, ge=0, le=65535)
    max_connections: int = Field(
        default=64,
        ge=1,
        description="Open connections; each carries one request at a time, so this also caps "
        "concurrent requests. Lowered at start to fit the file-descriptor limit.",
    )


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
    wal: WalConfig = Field(default_factory=WalConfig)
    routing: RoutingConfig = Field(default_factory=RoutingConfig)
    deid: DeidConfig = Field(default_factory=DeidConfig)
    bus: BusConfig = Field(default_factory=BusConfig)
    scorers: ScorerConfig = Field(default_factory=ScorerConfig)
    regressions: RegressionConfig = Field(default_factory=RegressionConfig)
    exporter: ExporterConfig = Field(default_factory=ExporterConfig)
    session_store: SessionStoreConfig = Field(default_factory=SessionStoreConfig)
    calibration: CalibrationConfig = Field(default_factory=CalibrationConfig)
    data_dir: Path = Field(
        default=Path("turnwatch-data"),
        description="Where turnwatch keeps state: the generated pseudonym key, quarantine, "
        "spool, write-ahead log.",
    )
    log: LogConfig = Field(default_factory=LogConfig)

    @field_validator("service_fallback")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return value

    @property
    def collector(self) -> CollectorConfig:
        """The collector stage's blocks, without the rest of the settings."""
        return CollectorConfig(
            service_fallback=self.service_fallback,
            conversation_key=self.conversation_key,
            sessions=self.sessions,
            sampling=self.sampling,
            handoff=self.handoff,
            decoders=self.decoders,
            wal=self.wal,
            routing=self.routing,
        )

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
        data = _read_config_file(config_path)
    try:
        settings = Settings(**data)
    except ValidationError as exc:
        raise ConfigError(_format_validation_error(exc, origin)) from exc
    except SettingsError as exc:
        # e.g. TURNWATCH_SESSIONS='{bad json': pydantic-settings names the field in its message.
        raise ConfigError(f"invalid configuration ({origin}): {exc}") from exc
    return _with_overrides(settings, overrides) if overrides else settings


def _read_config_file(config_path: Path) -> dict[str, Any]:
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
        return {}
    if not isinstance(loaded, dict):
        raise ConfigError(f"config file {config_path} must hold a mapping at the top level")
    # YAML allows keys such as `1:` or `true:`; they cannot be keyword arguments below.
    for key in loaded:
        if not isinstance(key, str):
            raise ConfigError(f"config file {config_path}: {key!r}: not a field name")
    return loaded


def _with_overrides(settings: Settings, overrides: dict[str, Any]) -> Settings:
    # Overrides are validated per section: validating a whole Settings again would re-read the
    # environment on top of them, and flags must beat environment variables.
    by_section: dict[str, dict[str, Any]] = {}
    updates: dict[str, Any] = {}
    for dotted, value in overrides.items():
        section, dot, name = dotted.partition(".")
        if dot:
            by_section.setdefault(section, {})[name] = value
        else:
            updates[dotted] = _top_level_override(settings, dotted, value)
    for section, values in by_section.items():
        updates[section] = _section_override(settings, section, values)
    return settings.model_copy(update=updates)


def _top_level_override(settings: Settings, name: str, value: Any) -> Any:
    field = Settings.model_fields.get(name)
    if field is None or isinstance(getattr(settings, name), Section):
        raise ConfigError(f"invalid configuration (command line): {name}: not a setting")
    try:
        return TypeAdapter(field.annotation).validate_python(value)
    except ValidationError as exc:
        message = _format_validation_error(exc, "command line", prefix=name)
        raise ConfigError(message) from exc


def _section_override(settings: Settings, section: str, values: dict[str, Any]) -> Section:
    current = getattr(settings, section, None)
    if not isinstance(current, Section):
        raise ConfigError(f"invalid configuration (command line): {section}: not a section")
    try:
        return type(current).model_validate({**current.model_dump(), **values})
    except ValidationError as exc:
        message = _format_validation_error(exc, "command line", prefix=f"{section}.")
        raise ConfigError(message) from exc
