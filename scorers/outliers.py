"""Drift-window outliers: a session whose graded score falls far below what its service's recent
sessions scored on the same metric.

Runs in the scorer role, beside the flagging rules: the baseline is the last `baseline_window`
scores per (service, metric) seen by this process, with the same minimum-traffic guard as the
exported drift gauges, so a quiet period or a fresh process flags nothing.
"""

from __future__ import annotations

from turnwatch.drift import SCORE_BUCKETS, DriftConfig, Window
from turnwatch.lru import LRU
from turnwatch.scores import ScoreRecord

MAX_SERIES = 1_000
"""(service, metric) baselines kept; the least recently scored is forgotten past this."""


class ScoreOutliers:
    def __init__(self, drift: DriftConfig, threshold: float) -> None:
        self.drift = drift
        self.threshold = threshold
        self.baselines: LRU[tuple[str, str], Window] = LRU(MAX_SERIES)

    def __call__(self, record: ScoreRecord) -> bool:
        """Whether any score is `threshold` baseline deviations below the baseline mean."""
        outlier = False
        for score in record.metrics:
            if score.value is None:
                continue
            baseline = self._baseline((record.service, score.name))
            if len(baseline) >= self.drift.min_baseline:
                spread = max(baseline.stddev(), self.drift.min_stddev)
                outlier |= (baseline.mean() - score.value) / spread >= self.threshold
            baseline.push(score.value)
        return outlier

    def _baseline(self, key: tuple[str, str]) -> Window:
        baseline = self.baselines.get(key)
        if baseline is None:
            baseline = Window(self.drift.baseline_window, SCORE_BUCKETS)
            self.baselines.put(key, baseline)
        return baseline
