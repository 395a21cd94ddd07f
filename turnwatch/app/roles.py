"""Role builders: what the collector, sessionizer, scorer and exporter roles attach to the bus.

Each builder takes the service context and hands each stage only its own configuration block.
`build_roles` composes them the way `turnwatch serve --role` runs them; the demo and tests
compose their own from the same builders.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Literal

from fastapi import FastAPI
from prometheus_client import CollectorRegistry

from turnwatch.app.collector_role import CollectorRole, build_collector
from turnwatch.app.context import ServiceContext
from turnwatch.app.exposure import check_exporter
from turnwatch.app.settings import Settings
from turnwatch.bus.base import Handler
from turnwatch.bus.ledger import OffsetLedger
from turnwatch.bus.plugins import RecordHandler, SessionProcessor, load_callable
from turnwatch.bus.records import INCIDENTS, SCORES, SESSIONS, Output, Record
from turnwatch.exporters.config import ExporterConfig
from turnwatch.exporters.evaluation_events import EvaluationEvents
from turnwatch.exporters.gate.canary import CanaryGate
from turnwatch.exporters.ops import ReadinessCheck
from turnwatch.exporters.regressions.api import include_incidents_api
from turnwatch.exporters.regressions.handler import IncidentHandler, chain
from turnwatch.exporters.regressions.metrics import RegressionMetrics
from turnwatch.exporters.regressions.store import CaseStore, ContractLookup, regressions_dir
from turnwatch.exporters.score_exporter import ScoreExporter
from turnwatch.exporters.sessions.claims import SentMarks
from turnwatch.exporters.sessions.handler import SessionStoreHandler, open_store
from turnwatch.exporters.sessions.metrics import SessionStoreMetrics
from turnwatch.exporters.sessions.store import SessionStore
from turnwatch.exporters.web.app import WebView, include_web_ui
from turnwatch.incidents import Incident
from turnwatch.schema import Session
from turnwatch.scorers.flagging import Flagger
from turnwatch.scorers.judge.evaluate import JudgeEvaluator
from turnwatch.scorers.outliers import ScoreOutliers
from turnwatch.scorers.registry import ContractRegistry
from turnwatch.scorers.runner import Publish, Scorer, ScoringProcessor, bus_processor
from turnwatch.scores import ScoreRecord

log = logging.getLogger("turnwatch.roles")


def scorer_handler(processor: SessionProcessor) -> Handler:
    async def handle(topic: str, record: Record) -> list[Output]:
        assert isinstance(record, Session)  # the bus validated it against the session schema
        return list(await processor(record))

    return handle


def exporter_handler(
    handler: RecordHandler, sessions: SessionStoreHandler | None = None
) -> Handler:
    """Scores and incidents to `handler`; sessions (read only when the store is on) to the store."""

    async def handle(topic: str, record: Record) -> list[Output]:
        if isinstance(record, Session) and sessions is not None:
            return list(await sessions(topic, record))
        # The bus validated it against its topic's model (scores or incidents).
        assert isinstance(record, ScoreRecord | Incident)
        return list(await handler(topic, record))

    return handle


def build_scorer_processor(
    settings: Settings, registry: CollectorRegistry, publish: Publish | None = None
) -> SessionProcessor:
    """The scorer role's work per session: `bus.scorer_processor`, else turnwatch's scorers
    (given the bus's `publish`, judge metrics follow the checks instead of holding them back)."""
    if settings.bus.scorer_processor:
        return load_callable(settings.bus.scorer_processor)
    judge = JudgeEvaluator(settings.scorers.judge, registry)
    outliers = ScoreOutliers(settings.exporter.drift, settings.regressions.drift_outlier_deviations)
    flag = Flagger(settings.regressions, drift_outlier=outliers)
    return bus_processor(Scorer(settings.scorers, judge=judge), flag=flag, publish=publish)


@dataclass
class Exporters:
    """The exporter stage as `turnwatch serve` runs it: score records and incidents in,
    Prometheus score metrics and drift gauges, regression cases on disk and the session store
    out. `sessions_handler` takes the sessions the store joins with their scores."""

    handler: RecordHandler
    store: CaseStore
    sessions: SessionStore | None = None
    sessions_handler: SessionStoreHandler | None = None
    events: EvaluationEvents | None = None
    """Sends each result as a `gen_ai.evaluation.result` event, when an endpoint is set."""
    canary: CanaryGate | None = None
    """The online canary gate, when `exporter.canary` is on."""
    ledger: OffsetLedger | None = None
    """With evaluation events, on Kafka or the spooled embedded bus: holds each score record
    until its events settled."""


def contract_lookup(settings: Settings) -> ContractLookup | None:
    """Service name -> its contract (what regression cases copy from it), if contracts exist."""
    contracts_dir = settings.scorers.contracts_dir
    return ContractRegistry.from_directory(contracts_dir).for_service if contracts_dir else None


def exporter_config(settings: Settings) -> ExporterConfig:
    """The `exporter` block as this process applies it. In-process drift windows are right only
    where one process consumes every score record: the embedded bus. A member of the Kafka
    exporter group sees only its partitions' sessions, so its gauges would disagree with its
    peers' for the same service and metric; there drift comes from the Prometheus rules over
    the histograms summed across members (README: several exporter replicas)."""
    config = settings.exporter
    if settings.bus.kafka.bootstrap is None or not config.drift.enabled:
        return config
    log.info("in-process drift gauges off: an exporter group member sees part of the scores")
    drift = config.drift.model_copy(update={"enabled": False})
    return config.model_copy(update={"drift": drift})


def holds_records(settings: Settings) -> bool:
    """Whether the bus keeps a record a handler holds past its return until it is released:
    Kafka (uncommitted) and the embedded bus on disk (not acknowledged). In memory the embedded
    bus dies with the process, so a hold there would keep nothing."""
    return settings.bus.kafka.bootstrap is not None or settings.bus.embedded.spool


def build_exporters(settings: Settings, registry: CollectorRegistry) -> Exporters:
    """With the session store on, it is also the arbiter of what is counted (count claims), so
    a score record redelivered to another exporter member is counted once across them, keeps
    which parts' evaluation events were sent, so the next owner does not send them again, and
    holds the online canary's windows, so every member compares the same sessions."""
    store = CaseStore(
        regressions_dir(settings.data_dir),
        settings.regressions,
        RegressionMetrics(registry),
        contract_lookup(settings),
    )
    sessions = None
    if settings.session_store.enabled:
        metrics = SessionStoreMetrics(registry)
        sessions = open_store(settings.session_store, settings.data_dir, metrics)
    scores = ScoreExporter(registry, exporter_config(settings), sessions)
    handlers: list[RecordHandler] = [scores.handle, IncidentHandler(store)]
    events: EvaluationEvents | None = None
    ledger: OffsetLedger | None = None
    if settings.exporter.evaluation_events.endpoint is not None:
        marks = None
        if sessions is not None:
            marks = SentMarks(sessions.db, settings.exporter.claim_retention_hours)
        ledger = OffsetLedger() if holds_records(settings) else None
        events = EvaluationEvents(settings.exporter.evaluation_events, registry, marks, ledger)
        handlers.append(events.handle)
    sessions_handler = None
    if sessions is not None:
        sessions_handler = SessionStoreHandler(sessions)
        handlers.append(sessions_handler)
    return Exporters(
        chain(*handlers), store, sessions, sessions_handler, events, scores.canary, ledger
    )


@dataclass(frozen=True)
class Consumer:
    """A role that consumes bus topics (the scorer, the exporter)."""

    name: str
    topics: tuple[str, ...]
    group: str
    handler: Handler
    mount: Callable[[FastAPI], None] | None = None
    """Adds the role's own routes to the ops server."""
    readiness: dict[str, ReadinessCheck] = field(default_factory=dict)
    """The role's own `/readyz` checks (the scorer's: a stuck judge)."""
    drain: Callable[[float], Awaitable[None]] | None = None
    """Finishes the role's work in progress at shutdown, within the seconds given (the scorer's:
    the sessions still being judged, whose judged parts it publishes)."""
    ledger: OffsetLedger | None = None
    """Set when the handler holds records past its return (the sessionizer's observations, the
    exporter's score records until their evaluation events are settled)."""
    background: tuple[Callable[[], Awaitable[None]], ...] = ()
    """Tasks that run while the role consumes (the sessionizer's sweeper and handoff)."""
    close: Callable[[], None] | None = None
    """Releases what the role holds once everything has stopped."""


def build_scorer(context: ServiceContext, processor: SessionProcessor | None = None) -> Consumer:
    """Sessions in, score records and incidents out; `processor` defaults to `bus.*` settings."""
    settings = context.settings
    chosen = processor or build_scorer_processor(settings, context.registry, context.bus().publish)
    group = settings.bus.kafka.scorer_group
    handler = scorer_handler(chosen)
    if not isinstance(chosen, ScoringProcessor):
        return Consumer("scorer", (SESSIONS,), group, handler)
    checks = {"judge": chosen.readiness}
    return Consumer("scorer", (SESSIONS,), group, handler, readiness=checks, drain=chosen.drain)


def build_exporter(context: ServiceContext, tap: RecordHandler | None = None) -> Consumer:
    """Score records and incidents in (sessions too while the session store is on); metrics,
    regression cases, the session store, the incidents API and the web view out.
    `bus.exporter_handler` and `tap` run after turnwatch's exporters on each score and
    incident, beside them: a tap never turns the exporters off."""
    settings = context.settings
    check_exporter(settings)
    exporters = build_exporters(settings, context.registry)
    taps = [load_callable(settings.bus.exporter_handler)] if settings.bus.exporter_handler else []
    taps += [tap] if tap is not None else []
    handler = chain(exporters.handler, *taps)
    topics: tuple[str, ...] = (SCORES, INCIDENTS)
    if exporters.sessions is not None:
        topics = (SESSIONS, *topics)
    mount = functools.partial(mount_exporter_routes, settings=settings, exporters=exporters)
    group = settings.bus.kafka.exporter_group
    consume = exporter_handler(handler, exporters.sessions_handler)
    drain = exporters.events.drain if exporters.events is not None else None
    canary = exporters.canary
    # Shared windows change with every replica's writes: they are evaluated on a clock.
    background = (canary.evaluate_periodically,) if canary and canary.shared else ()
    return Consumer(
        "exporter",
        topics,
        group,
        consume,
        mount,
        drain=drain,
        ledger=exporters.ledger,
        background=background,
    )


def mount_exporter_routes(app: FastAPI, settings: Settings, exporters: Exporters) -> None:
    """The incidents API and, with the session store, the web view (same token for both)."""
    token = settings.regressions.api_token
    include_incidents_api(app, store=exporters.store, token=token)
    if exporters.sessions is not None:
        view = WebView(
            exporters.sessions,
            exporters.store,
            token,
            settings.data_dir,
            settings.session_store.curated_dataset,
            settings.regressions,
            contract_lookup(settings),
            exporters.sessions.metrics,
        )
        include_web_ui(app, view)


Role = Literal["all", "collector", "sessionizer", "scorer", "exporter"]


@dataclass
class Roles:
    """What one process runs: a collector, bus consumers, or both."""

    name: str = "all"
    collector: CollectorRole | None = None
    consumers: list[Consumer] = field(default_factory=list)


def build_roles(context: ServiceContext, role: Role = "all") -> Roles:
    """`turnwatch serve --role ROLE`: the collector, the scorer and the exporter, or one of them
    (the sessionizer runs only on its own, behind collectors in `routing.mode: route`)."""
    roles = Roles(role)
    if role in ("all", "collector"):
        roles.collector = build_collector(context)
    routing = context.settings.routing.mode == "route"
    if role == "sessionizer" or (role == "all" and routing):
        # Imported here: it builds on this module's Consumer.
        from turnwatch.app.sessionizer_role import build_sessionizer

        roles.consumers.append(build_sessionizer(context))
    if role in ("all", "scorer"):
        roles.consumers.append(build_scorer(context))
    if role in ("all", "exporter"):
        roles.consumers.append(build_exporter(context))
    return roles
