"""Run the configured judge metrics on one closed session: `JudgeEvaluator.evaluate -> [Score]`.

Sessions reach the scorer when the collector closes them (idle, end marker, caps), so judging runs
once per session revision, never per turn; the verdict cache makes a revision pay only for what it
changed. Metrics run concurrently; the judge's admission and rate limits pace the calls.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

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
from turnwatch.scorers.judge.task import Judge, Usage
from turnwatch.scorers.judge.telemetry import JudgeTelemetry

from turnwatch.schema import Session
from turnwatch.scores import Score

log = logging.getLogger(__name__)

MetricFn = Callable[[Inputs, Judge, Usage], Awaitable[list[Score]]]


def build_judge(config: JudgeConfig, telemetry: JudgeTelemetry) -> Judge:
    if config.endpoint.base_url is None:
        return HeuristicJudge()
    from turnwatch.scorers.judge.client import (
        EndpointJudge,  # httpx only when an endpoint is configured
    )

    return EndpointJudge(config, telemetry, VerdictCache(config.cache_size))


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
        available: dict[str, MetricFn] = {
            "turn_relevancy": turn_relevancy,
            "role_adherence": role_adherence,
            "knowledge_retention": knowledge_retention,
            "conversation_completeness": conversation_completeness,
            "geval": self.geval.score,
        }
        self.metrics = [(name, available[name]) for name in config.metrics]

    async def evaluate(self, session: Session, role: str | None) -> list[Score]:
        """Scores for a session; [] when judging is off or the session is not in the sample."""
        if not self.config.enabled:
            return []
        if not judged(session, self.config.sample_rate):
            self.telemetry.skipped.labels("not_sampled").inc()
            return []
        inputs = Inputs(session, view.lines(session, self.config.max_turn_chars), role, self.config)
        results = await asyncio.gather(
            *(self._run(name, metric, inputs) for name, metric in self.metrics)
        )
        scores = [score for batch in results for score in batch]
        for score in scores:
            family = score.name.split(".", 1)[0]
            outcome = "scored" if score.value is not None else "unscored"
            self.telemetry.scores.labels(family, self.judge.name, outcome).inc()
        return scores

    async def _run(self, name: str, metric: MetricFn, inputs: Inputs) -> list[Score]:
        try:
            return await metric(inputs, self.judge, Usage())
        except Exception as exc:  # one broken metric must not sink the others
            log.warning(
                "judge metric failed",
                extra={
                    "metric": name,
                    "session_id": inputs.session.session_id,
                    "error": type(exc).__name__,
                },
            )
            return [
                Score(
                    name=name,
                    value=None,
                    unscored_reason=f"metric raised {type(exc).__name__}",
                    metadata={"judge": self.judge.name},
                )
            ]

    async def aclose(self) -> None:
        close = getattr(self.judge, "aclose", None)
        if close is not None:
            await close()
