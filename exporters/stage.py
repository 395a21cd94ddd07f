"""The exporter stage as `turnwatch serve` runs it: score records and incidents in, Prometheus
score metrics and drift gauges, and regression cases on disk (read by the incidents API) out."""

from __future__ import annotations

from dataclasses import dataclass

from prometheus_client import CollectorRegistry

from exporters.regressions.handler import IncidentHandler, chain
from exporters.regressions.metrics import RegressionMetrics
from exporters.regressions.store import CaseStore, regressions_dir
from exporters.score_exporter import ScoreExporter
from scorers.registry import ContractRegistry
from turnwatch.bus.plugins import RecordHandler
from turnwatch.config import Settings


@dataclass
class Exporters:
    handler: RecordHandler
    store: CaseStore


def build_exporters(settings: Settings, registry: CollectorRegistry) -> Exporters:
    contracts_dir = settings.scorers.contracts_dir
    contracts = (
        ContractRegistry.from_directory(contracts_dir).for_service if contracts_dir else None
    )
    store = CaseStore(
        regressions_dir(settings.data_dir),
        settings.regressions,
        RegressionMetrics(registry),
        contracts,
    )
    scores = ScoreExporter(registry, settings.exporter)
    return Exporters(handler=chain(scores.handle, IncidentHandler(store)), store=store)
