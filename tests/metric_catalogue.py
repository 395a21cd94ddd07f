"""Every metric family turnwatch can register, on one registry: what README, the Prometheus rules
and the Grafana dashboard are checked against."""

from __future__ import annotations

from prometheus_client import CollectorRegistry
from turnwatch.collector.deid.config import DeidConfig
from turnwatch.collector.deid.metrics import DeidMetrics
from turnwatch.collector.metrics import CollectorMetrics
from turnwatch.collector.wal.metrics import WalMetrics
from turnwatch.exporters.evaluation_events import EvaluationMetrics
from turnwatch.exporters.gate.canary import CanaryMetrics
from turnwatch.exporters.regressions.metrics import RegressionMetrics
from turnwatch.exporters.score_metrics import ScoreMetrics
from turnwatch.exporters.sessions.metrics import AgreementMetrics, SessionStoreMetrics
from turnwatch.scorers.judge.telemetry import JudgeTelemetry

from turnwatch.app.http import OpsRejections
from turnwatch.bus.metrics import BusMetrics


def full_registry() -> CollectorRegistry:
    registry = CollectorRegistry()
    CollectorMetrics(registry)
    WalMetrics(registry)
    DeidMetrics(registry, DeidConfig().all_entities())
    BusMetrics(registry)
    JudgeTelemetry(registry)
    ScoreMetrics(registry)
    RegressionMetrics(registry)
    OpsRejections(registry)
    CanaryMetrics(registry)
    SessionStoreMetrics(registry)
    AgreementMetrics(registry)
    EvaluationMetrics(registry)
    return registry
