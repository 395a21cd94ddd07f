"""Knowledge retention: do assistant replies forget or contradict facts the user gave?

Facts come from tokens and patterns first (`facts.py`); one batched judge call extracts facts only
from the user turns those found nothing in. Then assistant replies after the first fact are
verified in batches: each call carries the facts known so far once and many replies, instead of
one call per user turn plus one per reply with the history re-sent each time.
Score = replies without attrition / replies verified.
"""

from __future__ import annotations

from turnwatch.scorers.judge.base import Inputs, ask_all, turn_list
from turnwatch.scorers.judge.facts import Fact, extract
from turnwatch.scorers.judge.prompt import load
from turnwatch.scorers.judge.schemas import AttritionVerdicts, ExtractedFacts
from turnwatch.scorers.judge.task import Judge, Task, Unjudged, Usage
from turnwatch.scorers.judge.view import Line, pack, render
from turnwatch.scorers.scorer import Result

NAME = "knowledge_retention"


def _facts_text(facts: list[Fact]) -> str:
    return "\n".join(
        f"{number}. (turn {fact.turn}) {fact.text}" for number, fact in enumerate(facts)
    )


async def _judge_facts(lines: list[Line], judge: Judge, usage: Usage) -> list[Fact] | Unjudged:
    if not lines:
        return []
    prompt = load("fact_extraction")
    budget = judge.input_budget(prompt.overhead_chars)
    groups = pack([line.render() for line in lines], budget)
    tasks = [
        Task(
            metric=NAME,
            prompt=prompt,
            values={"turns": render([lines[i] for i in group])},
            schema=ExtractedFacts,
            data=[lines[i] for i in group],
        )
        for group in groups
    ]
    answers = await ask_all(judge, tasks, usage)
    if isinstance(answers, Unjudged):
        return answers
    asked = {line.index for line in lines}
    return [
        Fact(fact.turn, fact.fact, "judge")
        for answer in answers
        for fact in answer.value.facts
        if fact.turn in asked
    ]


async def knowledge_retention(inputs: Inputs) -> Result:
    judge, usage = inputs.judge, inputs.usage
    found, undetermined = extract(inputs.lines)
    judged = await _judge_facts(undetermined, judge, usage)
    if isinstance(judged, Unjudged):
        return inputs.unscored(judged.reason)
    facts = sorted([*found, *judged], key=lambda fact: fact.turn)
    meta = {
        "facts": len(facts),
        "facts_without_judge": len(found),
        "turns_sent_for_extraction": len(undetermined),
    }
    if not facts:
        return inputs.unscored("no facts given by the user", **meta)
    replies = [
        line
        for line in inputs.lines
        if line.role.value == "assistant" and line.index > facts[0].turn
    ]
    if not replies:
        return inputs.unscored("no assistant reply after the first fact", **meta)
    prompt = load(NAME)
    # Every batch carries the facts, so they come out of each batch's budget.
    budget = judge.input_budget(prompt.overhead_chars + len(_facts_text(facts)))
    tasks = []
    for group in pack([line.render() for line in replies], budget):
        batch = [replies[i] for i in group]
        known = [fact for fact in facts if fact.turn < batch[-1].index]
        tasks.append(
            Task(
                metric=NAME,
                prompt=prompt,
                values={"facts": _facts_text(known), "replies": render(batch)},
                schema=AttritionVerdicts,
                data=(known, batch),
            )
        )
    answers = await ask_all(judge, tasks, usage)
    meta["batches"] = len(tasks)
    if isinstance(answers, Unjudged):
        return inputs.unscored(answers.reason, **meta)
    forgot: set[int] = set()
    for task, answer in zip(tasks, answers, strict=True):
        known, batch = task.data
        shown = {line.index for line in batch}
        for item in answer.value.attritions:
            # A fact given at or after the reply cannot have been forgotten by it.
            if item.turn in shown and (
                item.fact is None
                or not 0 <= item.fact < len(known)
                or known[item.fact].turn < item.turn
            ):
                forgot.add(item.turn)
    kept = len(replies) - len(forgot)
    explanation = f"{kept} of {len(replies)} replies keep the user's {len(facts)} facts"
    if forgot:
        explanation += f"; attrition at turns {turn_list(sorted(forgot))}"
    return inputs.scored(
        kept / len(replies),
        explanation,
        attrition_turns=sorted(forgot),
        **meta,
    )
