"""Configuration of the score exporter (the `exporter` block); composed into Settings."""

from __future__ import annotations

from pydantic import Field, model_validator

from turnwatch.section import Section


class DriftConfig(Section):
    enabled: bool = True
    recent_window: int = Field(
        default=200, gt=0, description="Latest scores per (service, metric) compared with..."
    )
    baseline_window: int = Field(default=2_000, gt=0, description="...the scores just before them.")
    min_recent: int = Field(
        default=50,
        gt=0,
        description="Fewer recent scores than this: the drift gauges read NaN (no alarm).",
    )
    min_baseline: int = Field(default=200, gt=0, description="Same guard for the baseline.")
    min_stddev: float = Field(
        default=0.02,
        gt=0,
        description="Floor on the baseline's standard deviation, so a constant baseline does "
        "not turn any small change into an infinite shift.",
    )

    @model_validator(mode="after")
    def _guards_fit(self) -> DriftConfig:
        # A guard larger than its window could never be met: drift would silently never show.
        if self.min_recent > self.recent_window:
            raise ValueError("min_recent must not exceed recent_window")
        if self.min_baseline > self.baseline_window:
            raise ValueError("min_baseline must not exceed baseline_window")
        return self


class ExporterConfig(Section):
    services: list[str] = Field(
        default_factory=list,
        description="Allow-list of `service` label values; empty = the first max_services seen.",
    )
    max_services: int = Field(
        default=20, ge=1, le=1_000, description="Distinct services before `other`."
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
    drift: DriftConfig = Field(default_factory=DriftConfig)
