"""What every judge metric shares: its input and how it turns answers into a `Result`.

A judge metric is `async (Inputs) -> Result`; `evaluate.JudgeMetric` binds it to the judge and
makes it a scorer like any check (`Context -> Result`, awaited). A metric that cannot get every
verdict it needs is unscored with the judge's reason: a partial set of windows or intentions would
bias the score toward whichever batches happened to succeed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from turnwatch.scorers.judge.config import JudgeConfig
from turnwatch.scorers.judge.task import Answer, Judge, T, Task, Unjudged, Usage
from turnwatch.scorers.judge.view import Line
from turnwatch.scorers.scorer import Result

from turnwatch.schema import Session
from turnwatch.scores import MAX_EXPLANATION_CHARS

REASONS = {
    "budget_calls": "judge call budget for this hour is spent",
    "budget_tokens": "judge token budget for this hour is spent",
    "queue_full": "too many judge requests waiting",
    "context_overflow": "input does not fit the judge's context window",
    "refused": "the judge refused to answer",
    "invalid_verdict": "the judge's answer did not match the format, after one repair",
    "rate_limited": "the judge endpoint kept answering 429",
    "timeout": "the judge endpoint timed out",
    "endpoint_error": "the judge endpoint failed",
    "bad_response": "the judge endpoint sent an unreadable response",
    "needs_judge_endpoint": "needs a judge endpoint",
    "non_finite": "the judge answered a number that is not finite",
    "deadline": "the judge endpoint answered too slowly (request deadline)",
    "incomplete_verdict": "the judge left out verdicts it was asked for",
    "session_deadline": "judging the session took longer than its deadline",
    "shutdown": "the scorer stopped before the judge answered",
    "backlog_full": "too many sessions waiting for the judge",
    "no_content": "no message content in the session (instrumentation without content capture?)",
}
ANSWER_ERRORS = frozenset({"incomplete_verdict"})
"""Unscored reasons a metric finds in answers the judge accepted (counted as judge errors)."""


@dataclass(frozen=True, slots=True)
class Inputs:
    """One metric's run on one session: the session as the judge reads it, the persona (the
    contract's `chatbot_role`), the judge configuration, the judge, and what judging cost."""

    session: Session
    lines: list[Line]
    role: str | None
    config: JudgeConfig
    judge: Judge
    usage: Usage = field(default_factory=Usage)

    def scored(self, value: float, explanation: str, **extra: Any) -> Result:
        return Result(
            value=round(value, 4),
            explanation=explanation[:MAX_EXPLANATION_CHARS],
            metadata=_metadata(self.judge, self.usage, extra),
        )

    def unscored(self, reason: str, **extra: Any) -> Result:
        return Result(
            unscored_reason=REASONS.get(reason, reason),
            metadata=_metadata(self.judge, self.usage, {"unscored": reason, **extra}),
        )


async def ask_all(
    judge: Judge, tasks: Sequence[Task[T]], usage: Usage
) -> list[Answer[T]] | Unjudged:
    """Every task's answer, or the first reason one of them could not be answered."""
    answers = await asyncio.gather(*(judge.ask(task, usage) for task in tasks))
    for answer in answers:
        if isinstance(answer, Unjudged):
            return answer
    return list(answers)  # type: ignore[arg-type]


def _metadata(judge: Judge, usage: Usage, extra: dict[str, Any]) -> dict[str, Any]:
    meta: dict[str, Any] = {"judge": judge.name}
    model = getattr(judge, "model", None)
    if model:
        meta["model"] = model
    meta.update(
        calls=usage.calls,
        cached_calls=usage.cached,
        prompt_tokens=usage.prompt_tokens,
        completion_tokens=usage.completion_tokens,
    )
    meta.update(extra)
    return meta


def turn_list(indexes: Sequence[int], limit: int = 20) -> str:
    shown = ", ".join(str(index) for index in sorted(indexes)[:limit])
    return shown + (", ..." if len(indexes) > limit else "")
