"""Run the configured judge metrics on one closed session: `JudgeEvaluator.evaluate -> [Score]`.

Each metric is a scorer (`JudgeMetric`, `Context -> Result`) run like the checks are; the
evaluator adds sampling and telemetry and files each result as the record's `Score`.

Sessions reach the scorer when the collector closes them (idle, end marker, caps), so judging runs
once per session revision, never per turn; the verdict cache makes a revision pay only for what it
changed. Metrics run concurrently; the judge's admission and rate limits pace the calls. All of a
session's judging has one wall-clock deadline (`session_deadline_seconds`): a metric not done by
then, or when the scorer stops, is unscored with that reason while the finished ones keep their
scores.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Literal

from prometheus_client import CollectorRegistry
from turnwatch.scorers.judge import view
from turnwatch.scorers.judge.base import ANSWER_ERRORS, REASONS, Inputs
from turnwatch.scorers.judge.cache import VerdictCache
from turnwatch.scorers.judge.completeness import conversation_completeness
from turnwatch.scorers.judge.config import JudgeConfig
from turnwatch.scorers.judge.geval import GEval
from turnwatch.scorers.judge.heuristic import HeuristicJudge
from turnwatch.scorers.judge.relevancy import turn_relevancy
from turnwatch.scorers.judge.retention import knowledge_retention
from turnwatch.scorers.judge.role import role_adherence
from turnwatch.scorers.judge.sampling import judged
from turnwatch.scorers.judge.task import Judge
from turnwatch.scorers.judge.telemetry import JudgeTelemetry
from turnwatch.scorers.scorer import (
    Context,
    Result,
    ScorerSpec,
    metric_score,
    run_scorer_async,
    unscored,
)

from turnwatch.scores import Score

Measure = Callable[[Inputs], Awaitable[Result]]

METRICS: dict[str, Measure] = {
    "turn_relevancy": turn_relevancy,
    "role_adherence": role_adherence,
    "knowledge_retention": knowledge_retention,
    "conversation_completeness": conversation_completeness,
}
"""The metrics by configured name; `geval` is one scorer per configured criterion."""

Ending = Literal["complete", "session_deadline", "shutdown"]


@dataclass(frozen=True, slots=True)
class Judgement:
    """A session's judge metrics, and how judging ended (every metric done, or cut short)."""

    scores: list[Score]
    ending: Ending


def build_judge(config: JudgeConfig, telemetry: JudgeTelemetry) -> Judge:
    if config.endpoint.base_url is None:
        return HeuristicJudge()
    from turnwatch.scorers.judge.client import (
        EndpointJudge,  # httpx only when an endpoint is configured
    )

    return EndpointJudge(config, telemetry, VerdictCache(config.cache_size))


@dataclass(frozen=True, slots=True)
class JudgeMetric:
    """A judge metric as a scorer (`Context -> Result`, awaited): it binds the judge and the
    judge configuration, and reads the session, its judge view and the contract's persona."""

    measure: Measure
    judge: Judge
    config: JudgeConfig

    async def __call__(self, ctx: Context) -> Result:
        max_chars = self.config.max_turn_chars
        lines = ctx.view(("judge_lines", max_chars), lambda: view.lines(ctx.session, max_chars))
        role = ctx.contract.chatbot_role if ctx.contract is not None else None
        return await self.measure(Inputs(ctx.session, lines, role, self.config, self.judge))


class JudgeEvaluator:
    def __init__(
        self,
        config: JudgeConfig,
        registry: CollectorRegistry | None = None,
        judge: Judge | None = None,
    ) -> None:
        self.config = config
        self.telemetry = JudgeTelemetry(registry if registry is not None else CollectorRegistry())
        self.judge = judge if judge is not None else build_judge(config, self.telemetry)
        self.geval = GEval()
        self.metrics = [spec for name in config.metrics for spec in self._scorers(name)]

    def _scorers(self, name: str) -> list[ScorerSpec]:
        if name == "geval":
            return [
                ScorerSpec(
                    f"geval.{criterion.name}",
                    self._bind(partial(self.geval.score, criterion=criterion)),
                )
                for criterion in self.config.geval
            ]
        return [ScorerSpec(name, self._bind(METRICS[name]))]

    def _bind(self, measure: Measure) -> JudgeMetric:
        return JudgeMetric(measure, self.judge, self.config)

    @property
    def remote(self) -> bool:
        """The judge calls out: its metrics follow the checks instead of holding them back."""
        return self.judge.remote

    def wanted(self, ctx: Context) -> bool:
        """Whether the session gets judge metrics: judging on, metrics configured, sampled."""
        if not (self.config.enabled and self.metrics):
            return False
        if not judged(ctx.session, self.config.sample_rate):
            self.telemetry.skipped.labels("not_sampled").inc()
            return False
        return True

    async def evaluate(self, ctx: Context) -> list[Score]:
        """Scores for a session; [] when judging is off or the session is not in the sample."""
        if not self.wanted(ctx):
            return []
        return (await self.judge_session(ctx)).scores

    async def judge_session(self, ctx: Context, stop: asyncio.Event | None = None) -> Judgement:
        """Every metric of a sampled session, within the session deadline or until `stop`."""
        runs = [
            asyncio.ensure_future(run_scorer_async(spec, ctx, judge=self.judge.name))
            for spec in self.metrics
        ]
        try:
            ending = await _settled(runs, self.config.session_deadline_seconds, stop)
        finally:
            late = [run for run in runs if not run.done()]
            for run in late:
                run.cancel()
            # Cancelled calls give back their admission slots and connections before we go on.
            await asyncio.gather(*late, return_exceptions=True)
        results = [run.result() if not run.cancelled() else self._cut(ending) for run in runs]
        return Judgement(self._filed(results), ending)

    def unscored(self, reason: str) -> list[Score]:
        """Every metric unscored for `reason` (a `base.REASONS` key): the session is not judged."""
        return self._filed([self._cut(reason)] * len(self.metrics))

    def _cut(self, reason: str) -> Result:
        return unscored(REASONS[reason], judge=self.judge.name, unscored=reason)

    def _filed(self, results: Sequence[Result]) -> list[Score]:
        scores = []
        for spec, result in zip(self.metrics, results, strict=True):
            if result.metadata.get("unscored") in ANSWER_ERRORS:
                self.telemetry.errors.labels(str(result.metadata["unscored"])).inc()
            score = metric_score(spec.name, result)
            family = score.name.split(".", 1)[0]
            outcome = "scored" if score.value is not None else "unscored"
            self.telemetry.scores.labels(family, self.judge.name, outcome).inc()
            scores.append(score)
        return scores

    def readiness(self) -> str | None:
        """Not ready while calls wait on a judge that answered none for `stuck_after_seconds`."""
        limit = self.config.endpoint.stuck_after_seconds
        if not (self.config.enabled and self.metrics) or limit == 0:
            return None
        silent = self.judge.unanswered_seconds()
        return f"judge endpoint unanswered for {silent:.0f} s" if silent > limit else None

    async def aclose(self) -> None:
        close = getattr(self.judge, "aclose", None)
        if close is not None:
            await close()


async def _settled(
    runs: Sequence[asyncio.Future[Result]], seconds: float, stop: asyncio.Event | None
) -> Ending:
    """Wait until every run is done, `seconds` pass or `stop` is set; say which came first."""
    waiters: set[asyncio.Future[object]] = {asyncio.ensure_future(asyncio.wait(runs))}
    if stop is not None:
        waiters.add(asyncio.ensure_future(stop.wait()))
    try:
        await asyncio.wait(waiters, timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiter in waiters:
            waiter.cancel()
    if all(run.done() for run in runs):
        return "complete"
    return "shutdown" if stop is not None and stop.is_set() else "session_deadline"
