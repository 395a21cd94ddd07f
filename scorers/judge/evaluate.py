"""Run the configured judge metrics on one closed session: `JudgeEvaluator.evaluate -> [Score]`.

Each metric is a scorer (`JudgeMetric`, `Context -> Result`) run like the checks are; the
evaluator adds sampling and telemetry and files each result as the record's `Score`.

Sessions reach the scorer when the collector closes them (idle, end marker, caps), so judging runs
once per session revision, never per turn; the verdict cache makes a revision pay only for what it
changed. Metrics run concurrently; the judge's admission and rate limits pace the calls.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial

from prometheus_client import CollectorRegistry
from turnwatch.scorers.judge import view
from turnwatch.scorers.judge.base import Inputs
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
from turnwatch.scorers.scorer import Context, Result, ScorerSpec, metric_score, run_scorer_async

from turnwatch.scores import Score

Measure = Callable[[Inputs], Awaitable[Result]]

METRICS: dict[str, Measure] = {
    "turn_relevancy": turn_relevancy,
    "role_adherence": role_adherence,
    "knowledge_retention": knowledge_retention,
    "conversation_completeness": conversation_completeness,
}
"""The metrics by configured name; `geval` is one scorer per configured criterion."""


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

    async def evaluate(self, ctx: Context) -> list[Score]:
        """Scores for a session; [] when judging is off or the session is not in the sample."""
        if not self.config.enabled:
            return []
        if not judged(ctx.session, self.config.sample_rate):
            self.telemetry.skipped.labels("not_sampled").inc()
            return []
        results = await asyncio.gather(
            *(run_scorer_async(spec, ctx, judge=self.judge.name) for spec in self.metrics)
        )
        scores = [
            metric_score(spec.name, result)
            for spec, result in zip(self.metrics, results, strict=True)
        ]
        for score in scores:
            family = score.name.split(".", 1)[0]
            outcome = "scored" if score.value is not None else "unscored"
            self.telemetry.scores.labels(family, self.judge.name, outcome).inc()
        return scores

    async def aclose(self) -> None:
        close = getattr(self.judge, "aclose", None)
        if close is not None:
            await close()
