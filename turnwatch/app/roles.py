"""Role builders: what the collector, scorer and exporter roles attach to the bus.

Each builder takes the settings and hands each stage only its own configuration block.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from prometheus_client import CollectorRegistry
from turnwatch.collector.pipeline import LoggingSink
from turnwatch.exporters.regressions.handler import IncidentHandler, chain
from turnwatch.exporters.regressions.metrics import RegressionMetrics
from turnwatch.exporters.regressions.store import CaseStore, regressions_dir
from turnwatch.exporters.score_exporter import ScoreExporter
from turnwatch.scorers.flagging import Flagger
from turnwatch.scorers.judge.evaluate import JudgeEvaluator
from turnwatch.scorers.outliers import ScoreOutliers
from turnwatch.scorers.registry import ContractRegistry
from turnwatch.scorers.runner import Scorer, bus_processor

from turnwatch.app.settings import Settings
from turnwatch.bus.base import Bus, Handler
from turnwatch.bus.config import BusConfig
from turnwatch.bus.metrics import BusMetrics
from turnwatch.bus.plugins import RecordHandler, SessionProcessor, load_callable
from turnwatch.bus.records import SESSIONS, Output, Record, RecordTooLarge
from turnwatch.incidents import Incident
from turnwatch.schema import Session
from turnwatch.scores import ScoreRecord


class BusSink:
    """The collector's last stage: de-identified sessions onto `turnwatch.sessions`."""

    def __init__(self, bus: Bus) -> None:
        self.bus = bus
        self._log = LoggingSink()

    async def deliver(self, session: Session) -> None:
        try:
            await self.bus.publish(SESSIONS, session.session_id, session)
        except RecordTooLarge:
            return  # counted as rejected by the bus
        await self._log.deliver(session)


def scorer_handler(processor: SessionProcessor) -> Handler:
    async def handle(topic: str, record: Record) -> list[Output]:
        assert isinstance(record, Session)  # the bus validated it against the session schema
        return list(await processor(record))

    return handle


def exporter_handler(handler: RecordHandler) -> Handler:
    async def handle(topic: str, record: Record) -> list[Output]:
        # The bus validated it against its topic's model (scores or incidents).
        assert isinstance(record, ScoreRecord | Incident)
        return list(await handler(topic, record))

    return handle


def build_bus(config: BusConfig, metrics: BusMetrics, data_dir: Path) -> Bus:
    """Kafka when a bootstrap is configured, else the embedded bus."""
    spool_dir = config.spool.directory or data_dir / "spool"
    if config.kafka.bootstrap:
        from turnwatch.bus.kafka import KafkaBus

        return KafkaBus(config, metrics, spool_dir)
    from turnwatch.bus.embedded import EmbeddedBus

    return EmbeddedBus(config, metrics, spool_dir)


def build_scorer_processor(settings: Settings, registry: CollectorRegistry) -> SessionProcessor:
    """The scorer role's work per session: `bus.scorer_processor`, else turnwatch's scorers."""
    if settings.bus.scorer_processor:
        return load_callable(settings.bus.scorer_processor)
    judge = JudgeEvaluator(settings.scorers.judge, registry)
    outliers = ScoreOutliers(settings.exporter.drift, settings.regressions.drift_outlier_deviations)
    flag = Flagger(settings.regressions, drift_outlier=outliers)
    return bus_processor(Scorer(settings.scorers, judge=judge), flag=flag)


@dataclass
class Exporters:
    """The exporter stage as `turnwatch serve` runs it: score records and incidents in,
    Prometheus score metrics and drift gauges, and regression cases on disk out."""

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
