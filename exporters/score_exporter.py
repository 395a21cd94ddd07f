"""The score exporter: one ScoreRecord in, Prometheus metrics and drift gauges updated.

Delivery is at-least-once, so the same session revision can arrive twice (a redelivery after a
rebalance, or the same record read from `turnwatch.scores` by a restarted consumer). A revision has
two parts, its checks and its judge metrics, which come in one `complete` record or in two (a
`checks` record, then a `judged` one repeating the checks): the seen revisions set
(`turnwatch.revisions`) remembers each part, so counters count each revision's checks once and
its judge metrics once, however the parts arrive. That memory is one process's: with the session
store on, a part is counted only once the store's count claims (`sessions/claims.py`) say this
delivery is the first, so a record redelivered to another member (after a kill or a partition
move) is not counted again; while the store cannot be written the record waits, uncommitted,
and the claim is retried. Memory stays bounded: the seen revisions, the
label limiters and the drift windows all have configured caps, and drift trackers exist only per
admitted (service, metric) label pair.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Sequence
from datetime import datetime

from prometheus_client import CollectorRegistry
from turnwatch.exporters.config import ExporterConfig
from turnwatch.exporters.gate.canary import CanaryGate
from turnwatch.exporters.gate.shared import StoredWindows
from turnwatch.exporters.labels import LabelLimiter, reason_code
from turnwatch.exporters.score_metrics import JOINT_OUTCOMES, ScoreMetrics
from turnwatch.exporters.sessions.claims import CountClaims
from turnwatch.exporters.sessions.store import SessionStore

from turnwatch.bus.records import ExporterRecord, Output
from turnwatch.drift import SCORE_BUCKETS, DriftTracker
from turnwatch.revisions import SeenRevisions
from turnwatch.scores import Part, Score, ScoreRecord, Status

log = logging.getLogger("turnwatch.exporter")

CLAIM_RETRY_SECONDS = (0.5, 1.0, 2.0, 5.0)
"""Waits between claim attempts while the store fails; the last one repeats."""


def parts_of(record: ScoreRecord) -> tuple[str, ...]:
    """The parts a record can count: `checks` unless it is a judged-only record, `judged`
    unless it is a checks-only one (a `judged` record repeats the checks, counted already)."""
    parts = () if record.part is Part.JUDGED else ("checks",)
    return parts + (() if record.part is Part.CHECKS else ("judged",))


class ScoreExporter:
    def __init__(
        self,
        registry: CollectorRegistry,
        config: ExporterConfig | None = None,
        store: SessionStore | None = None,
    ) -> None:
        """`store`, the session store when it is on: the arbiter of what is counted and the
        canary's shared windows."""
        self.config = config = config or ExporterConfig()
        self.claims = CountClaims(store.db, config.claim_retention_hours) if store else None
        self.metrics = ScoreMetrics(registry)
        overflow = self._count_overflow
        self.service = LabelLimiter(
            "service",
            config.max_services,
            config.services,
            overflow,
            admit_after=config.service_min_sessions,
        )
        self.metric = LabelLimiter("metric", config.max_metrics, config.metrics, overflow)
        self.check = LabelLimiter("check", config.max_checks, config.checks, overflow)
        self.reason = LabelLimiter("reason", config.max_reasons, (), overflow)
        self.revisions = SeenRevisions(config.dedupe_entries)
        self.drift: dict[tuple[str, str], DriftTracker] = {}
        self.canary = None
        if config.canary.enabled:
            shared = None
            if store is not None:
                canary = config.canary
                checks = list(canary.policy.rates)
                shared = StoredWindows(
                    store, canary.window_sessions, canary.max_versions, checks, self.service.admits
                )
            self.canary = CanaryGate(registry, config.canary, shared)

    def _count_overflow(self, label: str) -> None:
        self.metrics.label_overflow.labels(label).inc()

    def observe(
        self,
        record: ScoreRecord,
        session_ended_at: datetime | None = None,
        now: float | None = None,
    ) -> bool:
        """Count one score record; False when the parts it carries were already counted.

        `session_ended_at` (the session's last span) gives the end-to-end latency; the score
        record does not carry it, so only callers that hold the session can pass it. Judged by
        this process's memory alone: `handle` also asks the count claims.
        """
        return self.count(record, self.unseen_parts(record), session_ended_at, now)

    def unseen_parts(self, record: ScoreRecord) -> frozenset[str]:
        """The record's parts this process has not counted (nothing is remembered yet)."""
        return frozenset(
            part
            for part in parts_of(record)
            if not self.revisions.seen(record.session_id, record.revision, part)
        )

    def count(
        self,
        record: ScoreRecord,
        parts: frozenset[str],
        session_ended_at: datetime | None = None,
        now: float | None = None,
    ) -> bool:
        """Count `parts` of the record (the others were counted here or by another member) and
        remember all its parts; False when there is nothing to count."""
        for part in parts_of(record):
            self.revisions.add(record.session_id, record.revision, part)
        checks, judged = "checks" in parts, "judged" in parts
        if not (checks or judged):
            self.metrics.records.labels("duplicate").inc()
            return False
        now = time.time() if now is None else now
        m = self.metrics
        service = self.service(record.service)
        m.records.labels("exported").inc()
        if judged:
            for score in record.metrics:
                self._observe_score(service, score)
        if checks:
            self._observe_session(service, record, session_ended_at, now)
        # Clocks of the chatbot, scorer and exporter hosts differ a little: clamp at 0.
        m.export_delay.observe(max(now - record.scored_at.timestamp(), 0.0))
        m.last_exported.set(now)
        return True

    def _observe_session(
        self, service: str, record: ScoreRecord, session_ended_at: datetime | None, now: float
    ) -> None:
        m = self.metrics
        m.sessions_scored.labels(service).inc()
        # Series a ratio divides by must exist (at 0) before the first failure happens.
        m.critical_sessions.labels(service)
        for joint in JOINT_OUTCOMES:
            m.joint_success.labels(service, joint)
        self._observe_checks(service, record)
        outcome = {True: "success", False: "failure", None: "unscored"}[record.joint_success.value]
        m.joint_success.labels(service, outcome).inc()
        budgets = record.budgets
        m.tokens.labels(service, "input").inc(max(budgets.input_tokens, 0))
        m.tokens.labels(service, "output").inc(max(budgets.output_tokens, 0))
        if budgets.cost_usd is not None and budgets.cost_usd > 0:
            m.cost.labels(service).inc(budgets.cost_usd)
        m.session_latency.labels(service).observe(max(budgets.latency_ms, 0.0) / 1000)
        if session_ended_at is not None:
            m.end_to_end.observe(max(now - session_ended_at.timestamp(), 0.0))
        if self.canary is not None:
            self.canary.observe(service, record)

    def _observe_score(self, service: str, score: Score) -> None:
        m = self.metrics
        metric = self.metric(score.name)
        # Judge calls, tokens and spend are counted where the judge runs (scorers/judge/telemetry).
        if score.value is None:
            m.metric_unscored.labels(
                service, metric, self.reason(reason_code(score.unscored_reason))
            ).inc()
        else:
            # Validation allows any float; a judge bug must not put 7.0 in the [0, 1] histogram.
            value = min(max(score.value, 0.0), 1.0)
            m.score.labels(service, metric).observe(value)
            m.score_squares.labels(service, metric).inc(value * value)
            self._drift(service, metric, value)

    def _observe_checks(self, service: str, record: ScoreRecord) -> None:
        m = self.metrics
        for result in record.results():
            check = self.check(result.check)
            m.check_results.labels(service, check, result.status.value).inc()
            if result.status is Status.UNSCORED:
                reason = self.reason(reason_code(result.unscored_reason))
                m.check_unscored.labels(service, check, reason).inc()
            for finding in result.findings:
                m.findings.labels(service, self.check(finding.check), finding.severity.value).inc()
        for finding in record.critical_failures:
            m.critical_failures.labels(service, self.check(finding.check)).inc()
        if record.critical_failures:
            m.critical_sessions.labels(service).inc()

    def _drift(self, service: str, metric: str, value: float) -> None:
        if not self.config.drift.enabled:
            return
        key = (service, metric)
        tracker = self.drift.get(key)
        if tracker is None:
            # Bounded: keys are admitted label values, at most max_services x max_metrics (+other).
            tracker = self.drift[key] = DriftTracker(self.config.drift, SCORE_BUCKETS)
        reading = tracker.add(value)
        m = self.metrics
        m.drift_mean_shift.labels(service, metric).set(reading.mean_shift)
        m.drift_psi.labels(service, metric).set(reading.psi)
        m.drift_window.labels(service, metric, "recent").set(reading.recent)
        m.drift_window.labels(service, metric, "baseline").set(reading.baseline)

    async def handle(self, topic: str, record: ExporterRecord) -> Sequence[Output]:
        """The exporter role's bus handler (`RecordHandler`): counts score records.

        Incidents carry the same records and are left to the regression-case handler, so a
        flagged session is not counted twice. The bus validated the record against its topic's
        model; one that did not validate was dead-lettered and never reaches this handler.
        """
        if isinstance(record, ScoreRecord):
            parts = self.unseen_parts(record)
            if parts and self.claims is not None:
                parts = await self._claim(record, parts)
            self.count(record, parts, record.session_ended_at)
        return ()

    async def _claim(self, record: ScoreRecord, parts: frozenset[str]) -> frozenset[str]:
        """The parts this delivery may count, by the store's count claims. While the store
        fails the record is held (its offset is not committed, so a kill meanwhile loses
        nothing) and the claim retried, as publishing holds a record while the broker is down."""
        assert self.claims is not None
        attempt = uuid.uuid4().hex
        failures = 0
        while True:
            try:
                won = await asyncio.to_thread(
                    self.claims.claim, record.session_id, record.revision, parts, attempt
                )
            except Exception as exc:
                self.metrics.claim_failures.inc()
                if failures == 0:
                    log.error(
                        "session store unreachable: score record held until its count is claimed",
                        extra={"error": type(exc).__name__},
                    )
                wait = CLAIM_RETRY_SECONDS[min(failures, len(CLAIM_RETRY_SECONDS) - 1)]
                failures += 1
                await asyncio.sleep(wait)
                continue
            if failures:
                log.info("count claims resumed", extra={"failed_attempts": failures})
            return won
