"""Configuration of the score exporter (the `exporter` block); composed into Settings."""

from __future__ import annotations

from pydantic import Field, SecretStr
from turnwatch.exporters.gate.canary import CanaryConfig

from turnwatch.drift import DriftConfig
from turnwatch.section import Section


class EvaluationEventsConfig(Section):
    endpoint: str | None = Field(
        default=None,
        description="OTLP/HTTP logs URL (`http://collector:4318/v1/logs`) that receives each "
        "result as a `gen_ai.evaluation.result` event; None = off.",
    )
    headers: dict[str, SecretStr] = Field(
        default_factory=dict, description="Request headers (an API key); never logged."
    )
    timeout_seconds: float = Field(default=10.0, gt=0, le=60, description="Deadline per request.")
    max_queued_events: int = Field(
        default=10_000,
        gt=0,
        description="Events waiting to be sent; when that many wait, the handler waits for room.",
    )
    max_batch: int = Field(default=512, gt=0, le=10_000, description="Events per request.")
    dedupe_entries: int = Field(
        default=100_000,
        gt=0,
        description="(session, revision, part) remembered: sent once per process.",
    )


class ExporterConfig(Section):
    services: list[str] = Field(
        default_factory=list,
        description="Allow-list of `service` label values; empty = up to max_services names, "
        "each once it has service_min_sessions scored sessions.",
    )
    max_services: int = Field(
        default=20, ge=1, le=1_000, description="Distinct services before `other`."
    )
    service_min_sessions: int = Field(
        default=5,
        ge=1,
        description="Without an allow-list, scored sessions a service name needs before it takes "
        "a `service` label slot (until then it counts as `other`); 1 = first come.",
    )
    metrics: list[str] = Field(
        default_factory=list, description="Allow-list of `metric` (score name) label values."
    )
    max_metrics: int = Field(default=20, ge=1, le=200)
    checks: list[str] = Field(
        default_factory=list, description="Allow-list of `check` label values."
    )
    max_checks: int = Field(default=40, ge=1, le=200)
    max_reasons: int = Field(default=20, ge=1, le=200, description="Distinct unscored reasons.")
    dedupe_entries: int = Field(
        default=100_000,
        gt=0,
        description="(session_id, revision) pairs remembered so a redelivery is counted once.",
    )
    claim_retention_hours: float = Field(
        default=168.0,
        gt=0,
        description="How long the session store remembers which member counted a score "
        "record's part (count claims) and which parts' evaluation events were sent (sent "
        "marks), so a redelivery to another member is not counted or sent again.",
    )
    drift: DriftConfig = Field(default_factory=DriftConfig)
    evaluation_events: EvaluationEventsConfig = Field(default_factory=EvaluationEventsConfig)
    canary: CanaryConfig = Field(default_factory=CanaryConfig)
