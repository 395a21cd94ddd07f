"""The scorer runner: one session revision in, one score record out.

Checks and judge metrics are both scorers (`scorers/scorer.py`: `Context -> Result`); the runner
builds one `Context` per session, runs the checks inline and the judge metrics awaited, and files
their results into the record (`CheckResult`s by level, `Score`s in `metrics`).

`Scorer.score` is a plain callable; `bus_processor` adapts it to the bus's scorer role, which
awaits `process(session) -> [Output(topic, key, model)]` and publishes what it returns. Every score
record goes to `turnwatch.scores`; a flagged session also goes to `turnwatch.incidents` as an
`Incident` (the de-identified session, its score record and the flag reasons). The flag is the
regression loop's rules (`scorers.flagging.Flagger`) when given, else `incident_reasons`: a
critical failure or failed joint success. Records are keyed by session id, so a consumer
deduplicates a redelivered revision on (session_id, revision, part).

Deterministic results never wait for a judge. With a judge that calls out (an endpoint) and the
bus's `publish`, a revision's record comes in two parts: the `checks` part (and its incident, when
the checks flag it) is published as soon as the checks finish, and the judge metrics follow from
the backlog as the `judged` part, the same checks repeated with `metrics` filled in (and an
incident when only the judge metrics flag it: one incident per revision). Without `publish`, or
with the built-in heuristic judge (no network), one `complete` record goes out once judging ends.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime

from turnwatch.scorers.checks import selected
from turnwatch.scorers.checks.budgets import measure
from turnwatch.scorers.checks.disclosure import OwnerIndex
from turnwatch.scorers.config import ScorerConfig
from turnwatch.scorers.contract import DEFAULT_CRITICAL
from turnwatch.scorers.judge.backlog import Backlog
from turnwatch.scorers.judge.base import REASONS
from turnwatch.scorers.judge.evaluate import JudgeEvaluator
from turnwatch.scorers.registry import ContractRegistry
from turnwatch.scorers.scorer import Context, check_result, run_scorer, unscored
from turnwatch.scorers.summary import first_broken_transition, joint_success, slices

from turnwatch.bus.records import INCIDENTS, SCORES, Output, Record, RecordTooLarge
from turnwatch.incidents import Incident
from turnwatch.schema import Session
from turnwatch.scores import (
    CheckResult,
    ContractRef,
    Level,
    Part,
    ScoreRecord,
    Severity,
)

log = logging.getLogger("turnwatch.scorers")

Flag = Callable[[Session, ScoreRecord], list[str]]
"""(session, its score record) -> the reasons it is an incident; empty = not one."""

Publish = Callable[[str, str, Record], Awaitable[None]]
"""The bus's `publish(topic, key, record)`: returns once the record is safe."""


def missing_content(session: Session) -> str | None:
    """Why no scorer can judge this session, or None when it has text to judge.

    Instrumentation without content capture (the official OpenTelemetry instrumentations'
    default) sends model calls with timing and tokens but no messages: a check would find
    nothing wrong and "pass", which says nothing. Its budgets are still measured.
    """
    if not session.turns:
        return "the session has no turns"
    if all(turn.text is None for turn in session.turns):
        return REASONS["no_content"]
    return None


class Scorer:
    def __init__(
        self,
        config: ScorerConfig,
        registry: ContractRegistry | None = None,
        judge: JudgeEvaluator | None = None,
    ) -> None:
        if registry is None:
            registry = (
                ContractRegistry.from_directory(config.contracts_dir)
                if config.contracts_dir is not None
                else ContractRegistry([])
            )
        self.config = config
        self.registry = registry
        self.owner_index = OwnerIndex(
            config.owner_index_size, config.owner_min_sessions, config.owner_common_users
        )
        self.checks = selected(config, self.owner_index)
        # Pass a JudgeEvaluator built on the service's metrics registry to export judge metrics.
        self.judge = judge if judge is not None else JudgeEvaluator(config.judge)

    def context(self, session: Session) -> Context:
        return Context.of(session, self.registry.for_service(session.service), self.config)

    def score(self, session: Session) -> ScoreRecord:
        return self.record(self.context(session))

    __call__ = score

    async def score_with_judge(self, session: Session) -> ScoreRecord:
        """The checks' record with the judge metrics filled in (sampled; [] when not judged),
        waiting for the judge up to its session deadline."""
        ctx = self.context(session)
        record = self.record(ctx)
        if missing_content(session) is not None:
            return self.without_content(record)
        if not self.judge.wanted(ctx):
            return record
        judgement = await self.judge.judge_session(ctx)
        self.judge.telemetry.sessions.labels(judgement.ending).inc()
        return record.model_copy(update={"metrics": judgement.scores})

    def without_content(self, record: ScoreRecord) -> ScoreRecord:
        """A session without text: its judge metrics unscored too (its checks already are)."""
        if not (self.judge.config.enabled and self.judge.metrics):
            return record
        return record.model_copy(update={"metrics": self.judge.unscored("no_content")})

    def record(self, ctx: Context) -> ScoreRecord:
        session, contract = ctx.session, ctx.contract
        # Without a contract, disclosure is still critical: it needs no contract to be wrong.
        critical = set(contract.critical if contract is not None else DEFAULT_CRITICAL)
        severity = contract.severity if contract is not None else {}
        by_level: dict[Level, list[CheckResult]] = {level: [] for level in Level}
        ordered = []
        missing = missing_content(session)
        for spec in self.checks:
            chosen = severity.get(spec.name)  # type: ignore[call-overload]
            result = check_result(
                spec.name,
                unscored(missing) if missing is not None else run_scorer(spec, ctx),
                spec.name in critical,
                Severity(chosen) if chosen is not None else None,
            )
            by_level[spec.level].append(result)
            ordered.append(result)
        results = {result.check: result for result in ordered}
        return ScoreRecord(
            session_id=session.session_id,
            revision=session.revision,
            service=session.service,
            service_version=session.provenance.service_version,
            contract=(
                ContractRef(id=contract.id, version=contract.version)
                if contract is not None
                else None
            ),
            scored_at=datetime.now(UTC),
            session_ended_at=session.ended_at,
            turn_level=by_level[Level.TURN],
            trajectory_level=by_level[Level.TRAJECTORY],
            session_level=by_level[Level.SESSION],
            critical_failures=[
                finding
                for result in ordered
                for finding in result.findings
                if finding.severity is Severity.CRITICAL
            ],
            joint_success=joint_success(results),
            first_broken_transition=first_broken_transition(ordered),
            slices=slices(ctx),
            budgets=measure(session, self.config.prices),
        )


def is_incident(record: ScoreRecord) -> bool:
    return bool(incident_reasons(record))


def incident_reasons(record: ScoreRecord) -> list[str]:
    """The flag of a scorer without flagging rules: a critical failure or failed joint success."""
    reasons = ["critical_failure"] if record.critical_failures else []
    if record.joint_success.value is False:
        reasons.append("joint_failure")
    return reasons


class ScoringProcessor:
    """The scorer role's processor: a session in, its score record (and incident) out.

    Scoring runs inline on the bus's event loop: the checks are pure CPU work of a few
    milliseconds per session (see benchmarks/checks.py), and the owner index is not shared across
    threads. Judge calls to an endpoint run in the backlog, paced by the judge's own limits.
    """

    def __init__(self, scorer: Scorer, flag: Flag | None = None, publish: Publish | None = None):
        self.scorer = scorer
        self.flag = flag
        self.publish = publish
        judge = scorer.judge
        self.backlog = Backlog(judge.config.max_sessions_in_flight, judge.telemetry)

    async def __call__(self, session: Session) -> list[Output]:
        judge = self.scorer.judge
        if self.publish is None or not judge.remote:
            return self._outputs(session, await self.scorer.score_with_judge(session))
        ctx = self.scorer.context(session)
        record = self.scorer.record(ctx)
        if missing_content(session) is not None:
            return self._outputs(session, self.scorer.without_content(record))
        if not judge.wanted(ctx):
            return self._outputs(session, record)
        if self.backlog.full():
            judge.telemetry.sessions.labels("backlog_full").inc()
            unjudged = judge.unscored("backlog_full")
            return self._outputs(session, record.model_copy(update={"metrics": unjudged}))
        checks = record.model_copy(update={"part": Part.CHECKS})
        outputs = self._outputs(session, checks)
        # Published here rather than returned, so the judged part can never overtake it.
        await self._publish(outputs)
        self.backlog.start(self._judge(ctx, checks, flagged=len(outputs) > 1))
        return []

    async def _judge(self, ctx: Context, checks: ScoreRecord, flagged: bool) -> None:
        judge = self.scorer.judge
        judgement = await judge.judge_session(ctx, self.backlog.stopping)
        update = {"part": Part.JUDGED, "metrics": judgement.scores, "scored_at": datetime.now(UTC)}
        try:
            outputs = self._outputs(ctx.session, checks.model_copy(update=update))
            # The flag runs either way (drift baselines learn from every judged record), but a
            # revision is one incident: the checks part already published it.
            refused = await self._publish(outputs[:1] if flagged else outputs)
        except Exception as exc:  # a flag rule's bug, or the bus closed under us: log, count
            log.warning("judged score record not published", extra={"error": type(exc).__name__})
            refused = 1
        outcome = "publish_failed" if refused else judgement.ending
        judge.telemetry.sessions.labels(outcome).inc()

    def _outputs(self, session: Session, record: ScoreRecord) -> list[Output]:
        published = [Output(SCORES, record.session_id, record)]
        flag = self.flag
        reasons = flag(session, record) if flag is not None else incident_reasons(record)
        if reasons:
            incident = Incident.of(session, record, reasons)
            published.append(Output(INCIDENTS, record.session_id, incident))
        return published

    async def _publish(self, outputs: Sequence[Output]) -> int:
        """Publish each output; the number the bus refused as too large (it counts them)."""
        assert self.publish is not None
        refused = 0
        for output in outputs:
            try:
                await self.publish(output.topic, output.key, output.record)
            except RecordTooLarge:
                refused += 1
        return refused

    async def drain(self, timeout: float) -> None:
        """At shutdown: finish (or cut short) the sessions being judged, publish their parts."""
        await self.backlog.drain(timeout)

    def readiness(self) -> str | None:
        return self.scorer.judge.readiness()


def bus_processor(
    scorer: Scorer, flag: Flag | None = None, publish: Publish | None = None
) -> ScoringProcessor:
    """The scorer role's processor; give it the bus's `publish` so judge metrics follow the
    checks instead of holding them back."""
    return ScoringProcessor(scorer, flag, publish)
