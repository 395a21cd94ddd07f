"""The built-in judge: no model, no network. It answers only the metrics where its rules carry
signal, measured on the labelled corpus (`benchmarks/detection.py`, balanced accuracy at least
0.7 on both splits); every other metric is unscored, "needs a judge endpoint", so a number that
does not move with quality is never exported as a score nor fed to the drift gauges.

Measured (benchmarks/README.md, "Detection quality"), word overlap and phrase lists:
- role adherence: out-of-character phrases, claims to be a person, repeating the system
  instructions. Kept.
- turn relevancy (overlap of a reply with the user's message), knowledge retention (asking for a
  token's type again), conversation completeness (one of two requests never echoed): at or near
  chance on the corpus, whose answers paraphrase the questions. Dropped: the deterministic checks
  (knowledge_attrition, contradictions, outcome) cover what can be seen without a model.
"""

from __future__ import annotations

import re
from typing import Any

from turnwatch.scorers.checks.persona import instruction_runs, repeated_runs
from turnwatch.scorers.judge.schemas import OutOfCharacter, RoleVerdicts
from turnwatch.scorers.judge.task import Answer, T, Task, Unjudged, Usage
from turnwatch.scorers.phrases import claims_human

OUT_OF_CHARACTER = re.compile(
    r"\b(as an ai( language)? model|i am (chatgpt|a large language model|an ai developed by)|"
    r"shut up|stupid|idiot|moron|dumb question|i don'?t care|not my problem|whatever\b|"
    r"damn|hell no|screw (you|this))",
    re.IGNORECASE,
)
ANSWERED = frozenset({"role_adherence"})
"""The metrics the heuristic judge answers (measured signal); the others need an endpoint."""


def role(data: tuple[str, list[Any], list[str]]) -> RoleVerdicts:
    _, lines, instructions = data
    runs = instruction_runs(instructions)
    return RoleVerdicts(
        out_of_character=[
            OutOfCharacter(turn=line.index)
            for line in lines
            if line.role.value == "assistant"
            and (
                OUT_OF_CHARACTER.search(line.text)
                or claims_human(line.text)
                or repeated_runs(line.text, runs)
            )
        ]
    )


class HeuristicJudge:
    name = "heuristic"
    model = None
    remote = False

    def unanswered_seconds(self) -> float:
        return 0.0  # answers at once, on the caller's loop

    async def ask(self, task: Task[T], usage: Usage | None = None) -> Answer[T] | Unjudged:
        if task.heuristic is None or task.metric not in ANSWERED:
            return Unjudged("needs_judge_endpoint")
        return Answer(task.heuristic(task.data))

    def input_budget(self, task_overhead_chars: int) -> int:
        return 1 << 40  # no context window: never chunk
