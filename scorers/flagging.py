"""Flagging rules: which scored session revisions become incidents, and why.

Runs where both the session and its score record exist (the scorer role, through
`turnwatch.scorers.runner.bus_processor(scorer, flag=Flagger(config))`). Reasons are short codes
from a fixed vocabulary plus contract or metric names, so they are safe in logs, labels and case
files.
"""

from __future__ import annotations

from collections.abc import Callable

from turnwatch.scorers.config import FlaggingConfig

from turnwatch.schema import SamplingReason, Session
from turnwatch.scores import ScoreRecord

DriftOutlier = Callable[[ScoreRecord], bool]
"""True when the record's scores are outliers against its drift window (built in exporters)."""

FORCED = {
    SamplingReason.FORCED_ERROR,
    SamplingReason.FORCED_TOOL_ERROR,
    SamplingReason.FORCED_ATTRIBUTE,
}


class Flagger:
    def __init__(self, config: FlaggingConfig, drift_outlier: DriftOutlier | None = None):
        self.config = config
        self.drift_outlier = drift_outlier

    def __call__(self, session: Session, record: ScoreRecord) -> list[str]:
        config = self.config
        if not config.enabled:
            return []
        reasons = []
        if config.on_critical_failure and record.critical_failures:
            reasons.append("critical_failure")
        if config.on_joint_failure and record.joint_success.value is False:
            reasons.append("joint_failure")
        for score in record.metrics:
            threshold = config.metric_thresholds.get(score.name)
            # An unscored metric is not a low score: it never flags (nothing unscored is a 0).
            if threshold is not None and score.value is not None and score.value < threshold:
                reasons.append(f"metric_below:{score.name}")
        if config.on_forced_sample and session.sampling.reason in FORCED:
            reasons.append(f"sampling:{session.sampling.reason.value}")
        outlier = self.drift_outlier
        if config.on_drift_outlier and outlier is not None and outlier(record):
            reasons.append("drift_outlier")
        return reasons
