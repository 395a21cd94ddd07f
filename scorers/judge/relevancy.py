"""Turn relevancy: is each assistant reply relevant to the exchanges before it?

Windows of k exchanges (units, as DeepEval forms them) end at every s-th exchange. Instead of one
call per window, each carrying its k exchanges again, one call carries the span of turns covering a
batch of consecutive windows once, and lists the windows (reply turns + context turns). Batches
start at fixed window positions so an appended revision re-judges only the last batch.
Score = relevant windows / judged windows.
"""

from __future__ import annotations

from turnwatch.scorers.judge.base import Inputs, ask_all, turn_list
from turnwatch.scorers.judge.prompt import load
from turnwatch.scorers.judge.schemas import RelevancyVerdicts
from turnwatch.scorers.judge.task import Task, Unjudged
from turnwatch.scorers.judge.view import Exchange, exchanges, render
from turnwatch.scorers.scorer import Result

NAME = "turn_relevancy"


def targets(units: int, stride: int) -> list[int]:
    """Windows judged: those ending at every stride-th exchange (aligned to the start, so a
    revision keeps its earlier choices); a session shorter than the stride gets its last one."""
    chosen = [i for i in range(units) if (i + 1) % stride == 0]
    return chosen or ([units - 1] if units else [])


def _window_line(number: int, units: list[Exchange], k: int) -> str:
    unit = units[number]
    replies = ", ".join(str(line.index) for line in unit.assistant)
    first = units[max(0, number - k + 1)].lines[0].index
    before = [line.index for line in unit.lines if line.index < unit.assistant[0].index]
    end = before[-1] if before else first
    return f"window {number}: reply turn(s) {replies}; context turns {first}-{end}"


def _span(units: list[Exchange], batch: list[int], k: int) -> str:
    start = max(0, batch[0] - k + 1)
    return render([line for unit in units[start : batch[-1] + 1] for line in unit.lines])


def batches(units: list[Exchange], chosen: list[int], k: int, per_call: int, budget: int):
    """Consecutive windows, at most per_call each, whose span and window list fit the budget."""
    grouped: list[list[int]] = []
    for number in chosen:
        if grouped and len(grouped[-1]) < per_call:
            candidate = [*grouped[-1], number]
            size = len(_span(units, candidate, k)) + 60 * len(candidate)
            if size <= budget:
                grouped[-1] = candidate
                continue
        grouped.append([number])
    return grouped


async def turn_relevancy(inputs: Inputs) -> Result:
    judge, usage = inputs.judge, inputs.usage
    config = inputs.config.relevancy
    k, stride = config.window, config.stride
    meta = {"window": k, "stride": stride}
    units = exchanges(inputs.lines)
    if not units:
        return inputs.unscored("no complete exchange to judge", **meta)
    chosen = targets(len(units), stride)
    prompt = load(NAME)
    budget = judge.input_budget(prompt.overhead_chars)
    tasks = [
        Task(
            metric=NAME,
            prompt=prompt,
            values={
                "window": str(k),
                "transcript": _span(units, batch, k),
                "windows": "\n".join(_window_line(number, units, k) for number in batch),
            },
            schema=RelevancyVerdicts,
            data=[(number, units[max(0, number - k + 1) : number + 1]) for number in batch],
        )
        for batch in batches(units, chosen, k, config.windows_per_call, budget)
    ]
    answers = await ask_all(judge, tasks, usage)
    meta.update(windows=len(units), windows_judged=len(chosen), batches=len(tasks))
    if isinstance(answers, Unjudged):
        return inputs.unscored(answers.reason, **meta)
    verdicts: dict[int, str] = {}
    for task, answer in zip(tasks, answers, strict=True):
        asked = {number for number, _ in task.data}
        for verdict in answer.value.verdicts:
            if verdict.window in asked:
                verdicts[verdict.window] = verdict.verdict
    missing = [number for number in chosen if number not in verdicts]
    if missing:
        return inputs.unscored("incomplete_verdict", missing_windows=len(missing), **meta)
    irrelevant = [units[n].assistant[-1].index for n in chosen if verdicts[n] == "no"]
    relevant = len(chosen) - len(irrelevant)
    explanation = f"{relevant} of {len(chosen)} windows relevant (k={k}, stride={stride})"
    if irrelevant:
        explanation += f"; irrelevant replies at turns {turn_list(irrelevant)}"
    return inputs.scored(
        relevant / len(chosen),
        explanation,
        irrelevant_turns=irrelevant,
        **meta,
    )
