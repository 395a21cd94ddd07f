"""Configuration of the regression loop (`regressions:` in the YAML file)."""

from __future__ import annotations

from pydantic import Field, SecretStr

from turnwatch.section import Section


class RegressionConfig(Section):
    enabled: bool = Field(default=True, description="Flag sessions and write regression cases.")
    on_critical_failure: bool = Field(default=True, description="Flag any critical failure.")
    on_joint_failure: bool = Field(default=True, description="Flag failed joint success.")
    on_forced_sample: bool = Field(
        default=True,
        description="Flag sessions force-sampled by the collector (error, tool error, user "
        "feedback attribute).",
    )
    on_drift_outlier: bool = Field(
        default=True, description="Flag sessions the drift tracker reports as outliers."
    )
    drift_outlier_deviations: float = Field(
        default=3.0,
        gt=0,
        description="A score this many baseline standard deviations below the baseline mean of "
        "its service and metric is an outlier.",
    )
    metric_thresholds: dict[str, float] = Field(
        default_factory=dict,
        description="Judge metric name -> minimum; a scored value below it flags the session.",
    )
    dataset_version: str = Field(
        default="production-regressions-1",
        min_length=1,
        description="Written into every case; bump it when the team curates the case set.",
    )
    max_cases: int = Field(
        default=1_000, gt=0, description="Case files kept; the least recently seen is evicted."
    )
    max_occurrences: int = Field(
        default=20,
        gt=0,
        description="Occurrences listed per case (the count keeps counting past it).",
    )
    api_token: SecretStr | None = Field(
        default=None, description="When set, /api/incidents needs `Authorization: Bearer <token>`."
    )
    replay_timeout_seconds: float = Field(
        default=30.0, gt=0, description="Per request to the replay target."
    )
    replay_max_tool_rounds: int = Field(
        default=8, gt=0, description="Tool-call rounds per user turn before replay gives up."
    )
