"""Role builders: what the collector, scorer and exporter roles attach to the bus.

Each builder takes the service context and hands each stage only its own configuration block.
`build_roles` composes them the way `turnwatch serve --role` runs them; the demo and tests
compose their own from the same builders.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from fastapi import FastAPI
from prometheus_client import CollectorRegistry

from turnwatch.app.collector_role import CollectorRole, build_collector
from turnwatch.app.context import ServiceContext
from turnwatch.app.exposure import check_exporter
from turnwatch.app.settings import Settings
from turnwatch.bus.base import Handler
from turnwatch.bus.plugins import RecordHandler, SessionProcessor, load_callable
from turnwatch.bus.records import INCIDENTS, SCORES, SESSIONS, Output, Record
from turnwatch.exporters.regressions.api import include_incidents_api
from turnwatch.exporters.regressions.handler import IncidentHandler, chain
from turnwatch.exporters.regressions.metrics import RegressionMetrics
from turnwatch.exporters.regressions.store import CaseStore, regressions_dir
from turnwatch.exporters.score_exporter import ScoreExporter
from turnwatch.incidents import Incident
from turnwatch.schema import Session
from turnwatch.scorers.flagging import Flagger
from turnwatch.scorers.judge.evaluate import JudgeEvaluator
from turnwatch.scorers.outliers import ScoreOutliers
from turnwatch.scorers.registry import ContractRegistry
from turnwatch.scorers.runner import Scorer, bus_processor
from turnwatch.scores import ScoreRecord


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


@dataclass(frozen=True)
class Consumer:
    """A role that consumes bus topics (the scorer, the exporter)."""

    name: str
    topics: tuple[str, ...]
    group: str
    handler: Handler
    mount: Callable[[FastAPI], None] | None = None
    """Adds the role's own routes to the ops server."""


def build_scorer(context: ServiceContext, processor: SessionProcessor | None = None) -> Consumer:
    """Sessions in, score records and incidents out; `processor` defaults to `bus.*` settings."""
    settings = context.settings
    chosen = processor or build_scorer_processor(settings, context.registry)
    group = settings.bus.kafka.scorer_group
    return Consumer("scorer", (SESSIONS,), group, scorer_handler(chosen))


def build_exporter(context: ServiceContext, tap: RecordHandler | None = None) -> Consumer:
    """Score records and incidents in; metrics, regression cases and the incidents API out.
    `bus.exporter_handler`, when set, replaces the handler; `tap` runs after it on each record."""
    settings = context.settings
    check_exporter(settings)
    exporters = build_exporters(settings, context.registry)
    configured = settings.bus.exporter_handler
    handler = load_callable(configured) if configured else exporters.handler
    if tap is not None:
        handler = chain(handler, tap)
    token = settings.regressions.api_token
    mount = functools.partial(include_incidents_api, store=exporters.store, token=token)
    group = settings.bus.kafka.exporter_group
    return Consumer("exporter", (SCORES, INCIDENTS), group, exporter_handler(handler), mount)


Role = Literal["all", "collector", "scorer", "exporter"]


@dataclass
class Roles:
    """What one process runs: a collector, bus consumers, or both."""

    name: str = "all"
    collector: CollectorRole | None = None
    consumers: list[Consumer] = field(default_factory=list)


def build_roles(context: ServiceContext, role: Role = "all") -> Roles:
    """`turnwatch serve --role ROLE`: the collector, the scorer and the exporter, or one of them."""
    roles = Roles(role)
    if role in ("all", "collector"):
        roles.collector = build_collector(context)
    if role in ("all", "scorer"):
        roles.consumers.append(build_scorer(context))
    if role in ("all", "exporter"):
        roles.consumers.append(build_exporter(context))
    return roles
