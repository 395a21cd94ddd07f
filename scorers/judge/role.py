"""Role adherence: which assistant turns break the persona (the contract's `chatbot_role`)?

One call over the whole session; a session too long for the judge's window is cut into chunks
that overlap by a few turns (so a turn's immediate context travels with it), packed from the start
so a revision re-judges only its tail. Score = in-character assistant turns / assistant turns.
"""

from __future__ import annotations

from turnwatch.scorers.judge import heuristic
from turnwatch.scorers.judge.base import Inputs, ask_all, turn_list
from turnwatch.scorers.judge.prompt import load
from turnwatch.scorers.judge.schemas import RoleVerdicts
from turnwatch.scorers.judge.task import Task, Unjudged
from turnwatch.scorers.judge.view import Line, render
from turnwatch.scorers.scorer import Result

NAME = "role_adherence"
MAX_ROLE_CHARS = 2_000


def persona(role: str | None, system_instructions: list[str]) -> str | None:
    """The contract's role; without a contract, the system instructions stand in for it."""
    if role:
        return role[:MAX_ROLE_CHARS]
    joined = " ".join(system_instructions).strip()
    return joined[:MAX_ROLE_CHARS] or None


def chunks(lines: list[Line], budget: int, overlap: int) -> list[list[Line]]:
    found: list[list[Line]] = []
    start = 0
    while start < len(lines):
        end, size = start, 0
        while end < len(lines) and (end == start or size + len(lines[end].render()) + 1 <= budget):
            size += len(lines[end].render()) + 1
            end += 1
        found.append(lines[start:end])
        if end >= len(lines):
            break
        start = max(start + 1, end - overlap)
    return found


async def role_adherence(inputs: Inputs) -> Result:
    judge, usage = inputs.judge, inputs.usage
    role = persona(inputs.role, inputs.session.system_instructions)
    if role is None:
        return inputs.unscored("no persona: no contract chatbot_role")
    assistant = {line.index for line in inputs.lines if line.role.value == "assistant"}
    if not assistant:
        return inputs.unscored("no assistant turns")
    prompt = load(NAME)
    budget = judge.input_budget(prompt.overhead_chars + len(role))
    parts = chunks(inputs.lines, budget, inputs.config.role.overlap_turns)
    tasks = [
        Task(
            metric=NAME,
            prompt=prompt,
            values={"role": role, "transcript": render(part)},
            schema=RoleVerdicts,
            data=(role, part, inputs.session.system_instructions),
            heuristic=heuristic.role,
        )
        for part in parts
    ]
    answers = await ask_all(judge, tasks, usage)
    if isinstance(answers, Unjudged):
        return inputs.unscored(answers.reason, chunks=len(tasks))
    flagged: set[int] = set()
    ignored = 0
    for task, answer in zip(tasks, answers, strict=True):
        shown = {line.index for line in task.data[1]} & assistant
        for verdict in answer.value.out_of_character:
            if verdict.turn in shown:
                flagged.add(verdict.turn)
            else:
                ignored += 1  # an index the judge was not shown as an assistant turn
    explanation = f"{len(assistant) - len(flagged)} of {len(assistant)} assistant turns in role"
    if flagged:
        explanation += f"; out of character at turns {turn_list(sorted(flagged))}"
    return inputs.scored(
        (len(assistant) - len(flagged)) / len(assistant),
        explanation,
        out_of_character_turns=sorted(flagged),
        chunks=len(tasks),
        ignored_indexes=ignored,
    )
