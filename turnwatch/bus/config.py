"""Configuration of the bus (the `bus` block); composed into `turnwatch.app.settings.Settings`."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator

from turnwatch.section import Section

MiB = 1024 * 1024


class KafkaConfig(Section):
    bootstrap: str | None = Field(
        default=None,
        description="host:port[,host:port]; when set, the bus is Kafka (also `--kafka`, "
        "TURNWATCH_KAFKA_BOOTSTRAP).",
    )
    client_id: str = "turnwatch"
    partitions: int = Field(default=6, gt=0, description="Partitions of topics turnwatch creates.")
    replication_factor: int = Field(default=1, gt=0)
    compression: Literal["gzip", "snappy", "lz4", "zstd", "none"] = Field(
        default="gzip", description="Producer compression (gzip needs no extra package)."
    )
    linger_ms: int = Field(default=5, ge=0, le=1000)
    request_timeout_ms: int = Field(default=10_000, ge=500)
    delivery_timeout_ms: int = Field(
        default=30_000,
        ge=1_000,
        description="A record not acknowledged by then is spooled (or retried) by turnwatch.",
    )
    changelog_retention_seconds: int = Field(
        default=86_400,
        gt=0,
        description="How long turnwatch.sessionizer.changelog keeps a record (compacted as well "
        "on Apache Kafka); set at topic creation.",
    )
    scorer_group: str = "turnwatch-scorers"
    exporter_group: str = "turnwatch-exporters"
    sessionizer_group: str = "turnwatch-sessionizers"
    max_poll_records: int = Field(default=100, gt=0)
    max_poll_interval_ms: int = Field(
        default=300_000,
        ge=1_000,
        description="Also the rebalance timeout: a first join can wait this long on some brokers.",
    )
    session_timeout_ms: int = Field(default=45_000, ge=1_000)
    heartbeat_interval_ms: int = Field(default=3_000, ge=100)
    probe_interval_seconds: float = Field(
        default=5.0, gt=0, description="How often broker connectivity (and topics) is checked."
    )

    @model_validator(mode="after")
    def _timeouts(self) -> KafkaConfig:
        # kafka-python refuses a delivery timeout below linger + request timeout; say so here.
        if self.delivery_timeout_ms < self.linger_ms + self.request_timeout_ms:
            raise ValueError("delivery_timeout_ms must be >= linger_ms + request_timeout_ms")
        if self.heartbeat_interval_ms >= self.session_timeout_ms:
            raise ValueError("heartbeat_interval_ms must be below session_timeout_ms")
        return self


class EmbeddedBusConfig(Section):
    queue_size: int = Field(default=1_000, gt=0, description="Records waiting per topic.")
    high_watermark: float = Field(
        default=0.8, gt=0, le=1, description="Fill at which /readyz reports the bus saturated."
    )
    spool: bool = Field(
        default=False,
        description="Keep embedded topics on disk so a restart loses no closed session.",
    )


class SpoolConfig(Section):
    enabled: bool = Field(
        default=True, description="Spool to disk while Kafka is unreachable (else wait)."
    )
    directory: Path | None = Field(default=None, description="Default `<data_dir>/spool`.")
    max_bytes: int = Field(default=256 * MiB, gt=0)
    segment_bytes: int = Field(default=8 * MiB, gt=0)


class BusConfig(Section):
    kafka: KafkaConfig = Field(default_factory=KafkaConfig)
    embedded: EmbeddedBusConfig = Field(default_factory=EmbeddedBusConfig)
    spool: SpoolConfig = Field(default_factory=SpoolConfig)
    max_record_bytes: int = Field(
        default=4 * MiB,
        gt=0,
        description="Larger records are rejected and counted; topics turnwatch creates get "
        "max.message.bytes to match.",
    )
    dedupe_entries: int = Field(
        default=100_000, gt=0, description="Record identities remembered to drop redeliveries."
    )
    shutdown_timeout_seconds: float = Field(
        default=10.0,
        gt=0,
        description="At shutdown: time for the last records to reach the broker (or the "
        "embedded consumers), then for consumers to finish the record in hand.",
    )
    scorer_processor: str | None = Field(
        default=None,
        description="`module:function` the scorer role runs on each session; "
        "default: turnwatch's scorers (`scorers.*` settings).",
    )
    exporter_handler: str | None = Field(
        default=None,
        description="`module:function` the exporter role runs on each score and incident; "
        "default: turnwatch's exporters (regression cases).",
    )
