"""Stages tests compose with turnwatch's own, instead of flags in production code.

A collector unit test puts `AssembledAtOnce` after the pipeline and reads the sessions it built;
a service test composes a collector in front of a capturing stage (raw, or with de-identification
in front of it), or all roles with a scorer of its own.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from turnwatch.collector.config import CollectorConfig
from turnwatch.collector.metrics import CollectorMetrics
from turnwatch.collector.pipeline import (
    CollectorPipeline,
    PendingSession,
    SessionBuilder,
    SessionSink,
)
from turnwatch.collector.wal.durability import Durability

from turnwatch.app.collector_role import BusSink, CollectorRole, build_collector
from turnwatch.app.context import ServiceContext
from turnwatch.app.roles import Roles, build_exporter, build_scorer
from turnwatch.app.serve import Compose
from turnwatch.bus.plugins import RecordHandler, SessionProcessor
from turnwatch.schema import Session

TEST_ID_KEY = b"test-session-id-key-0123456789ab"


class AssembledAtOnce:
    """The pipeline's next stage in collector unit tests: each sampled session is assembled as it
    closes, on the caller's thread, and kept (no queue, no event loop)."""

    def __init__(
        self, config: CollectorConfig, metrics: CollectorMetrics, id_key: bytes = TEST_ID_KEY
    ) -> None:
        self.build = SessionBuilder(config.service_fallback, metrics, id_key)
        self.pending: list[PendingSession] = []
        self.sessions: list[Session] = []

    def offer(self, pending: PendingSession) -> None:
        self.pending.append(pending)
        self.sessions.append(self.build(pending))

    def overloaded(self) -> bool:
        return False

    def take(self) -> list[Session]:
        """The sessions built since the last call."""
        taken, self.sessions = self.sessions, []
        return taken


def assembling_pipeline(
    config: CollectorConfig,
    metrics: CollectorMetrics,
    clock: Callable[[], float] = time.monotonic,
    wal: Durability | None = None,
    id_key: bytes = TEST_ID_KEY,
) -> tuple[CollectorPipeline, AssembledAtOnce]:
    built = AssembledAtOnce(config, metrics, id_key)
    return CollectorPipeline(config, metrics, built, clock=clock, wal=wal), built


def collector_into(sink: SessionSink, deidentified: bool = False) -> Compose:
    """A collector whose sessions go to `sink` instead of the bus: as assembled, or through the
    de-identification stage `turnwatch serve` runs."""

    def compose(context: ServiceContext) -> Roles:
        if deidentified:
            return Roles(collector=build_collector(context, output=sink))
        return Roles(collector=CollectorRole(context, sink))

    return compose


def all_roles_raw(
    scorer: SessionProcessor | None = None, tap: RecordHandler | None = None
) -> Compose:
    """Every role on the bus, the collector without de-identification (Presidio takes seconds
    to load and these tests are about the bus)."""

    def compose(context: ServiceContext) -> Roles:
        return Roles(
            collector=CollectorRole(context, BusSink(context.bus())),
            consumers=[build_scorer(context, scorer), build_exporter(context, tap)],
        )

    return compose


def all_roles(tap: RecordHandler) -> Compose:
    """Every role as `turnwatch serve` composes them, with `tap` after the exporter."""

    def compose(context: ServiceContext) -> Roles:
        return Roles(
            collector=build_collector(context),
            consumers=[build_scorer(context), build_exporter(context, tap)],
        )

    return compose
