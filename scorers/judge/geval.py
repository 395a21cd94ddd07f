"""Conversational G-Eval: custom criteria from config, scored 0-10 over the whole conversation.

Evaluation steps are generated once per (criterion, model, prompt version) and kept, unless the
config gives them. When the endpoint returns logprobs, the score is the probability-weighted mean
over the score token's alternatives (G-Eval's estimator), which separates sessions a bare integer
would tie.
"""

from __future__ import annotations

import math
import re

from turnwatch.scorers.judge.base import Inputs
from turnwatch.scorers.judge.config import GEvalCriterion
from turnwatch.scorers.judge.prompt import load
from turnwatch.scorers.judge.schemas import EvaluationSteps, GEvalScore
from turnwatch.scorers.judge.task import Judge, Task, TokenLogprob, Unjudged, Usage
from turnwatch.scorers.judge.view import render
from turnwatch.scorers.scorer import Result

NAME = "geval"
_SCORE = re.compile(r'"score"\s*:\s*(\d+)')


def weighted_score(logprobs: list[TokenLogprob] | None, content: str | None = None) -> float | None:
    """Expected score from the alternatives at the score token; None without usable logprobs."""
    if not logprobs:
        return None
    text = "".join(item.token for item in logprobs)
    match = _SCORE.search(content if content is not None else text) or _SCORE.search(text)
    if match is None:
        return None
    offset = match.start(1)
    position = 0
    for item in logprobs:
        if position <= offset < position + len(item.token):
            weights = {}
            for token, logprob in item.top.items():
                value = token.strip()
                if value.isdigit() and 0 <= int(value) <= 10:
                    weights[int(value)] = weights.get(int(value), 0.0) + math.exp(logprob)
            total = sum(weights.values())
            if total <= 0:
                return None
            return sum(value * weight for value, weight in weights.items()) / total
        position += len(item.token)
    return None


class GEval:
    """Holds generated steps across sessions: they depend on the criterion, not the session."""

    def __init__(self) -> None:
        self._steps: dict[tuple[str, str, str], list[str]] = {}

    async def steps(self, criterion: GEvalCriterion, judge: Judge, usage: Usage):
        if criterion.evaluation_steps:
            return criterion.evaluation_steps
        prompt = load("geval_steps")
        key = (criterion.criteria, getattr(judge, "model", judge.name), prompt.version)
        if key in self._steps:
            return self._steps[key]
        answer = await judge.ask(
            Task(NAME, prompt, {"criteria": criterion.criteria}, EvaluationSteps), usage
        )
        if isinstance(answer, Unjudged):
            return answer
        self._steps[key] = answer.value.steps
        return answer.value.steps

    async def score(self, inputs: Inputs, criterion: GEvalCriterion) -> Result:
        """One criterion's score (`geval.<name>`); each criterion is a scorer of its own."""
        judge, usage = inputs.judge, inputs.usage
        if judge.name == "heuristic":
            return inputs.unscored("needs_judge_endpoint")
        steps = await self.steps(criterion, judge, usage)
        if isinstance(steps, Unjudged):
            return inputs.unscored(steps.reason)
        prompt = load("geval_score")
        listed = "\n".join(f"{number + 1}. {step}" for number, step in enumerate(steps))
        transcript = render(inputs.lines)
        overhead = prompt.overhead_chars + len(criterion.criteria) + len(listed)
        if len(transcript) > judge.input_budget(overhead):
            return inputs.unscored("context_overflow")
        answer = await judge.ask(
            Task(
                NAME,
                prompt,
                {"criteria": criterion.criteria, "steps": listed, "transcript": transcript},
                GEvalScore,
                logprobs=True,
            ),
            usage,
        )
        if isinstance(answer, Unjudged):
            return inputs.unscored(answer.reason)
        weighted = weighted_score(answer.logprobs)
        raw = answer.value.score
        value = (weighted if weighted is not None else raw) / 10
        how = "probability-weighted" if weighted is not None else "integer"
        return inputs.scored(
            value,
            f"criterion {criterion.name}: {raw}/10 ({how})",
            raw_score=raw,
            weighted=weighted is not None,
        )
