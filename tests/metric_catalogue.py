"""Every metric family turnwatch can register, on one registry: what README, the Prometheus rules
and the Grafana dashboard are checked against."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from collector.deid.config import DeidConfig
from collector.deid.metrics import DeidMetrics
from collector.metrics import CollectorMetrics
from exporters.regressions.metrics import RegressionMetrics
from exporters.score_metrics import ScoreMetrics
from scorers.judge.telemetry import JudgeTelemetry
from turnwatch.bus.metrics import BusMetrics


def full_registry() -> CollectorRegistry:
    registry = CollectorRegistry()
    CollectorMetrics(registry)
    DeidMetrics(registry, DeidConfig().all_entities())
    BusMetrics(registry)
    JudgeTelemetry(registry)
    ScoreMetrics(registry)
    RegressionMetrics(registry)
    return registry
