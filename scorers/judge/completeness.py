"""Conversation completeness: were all of the user's intentions satisfied?

Two calls whatever the number of intentions: one extracts intentions from the user turns only (the
assistant's words add tokens, not goals), one verifies all of them against the whole conversation.
Score = satisfied intentions / intentions.
"""

from __future__ import annotations

from turnwatch.scorers.judge.base import Inputs
from turnwatch.scorers.judge.prompt import load
from turnwatch.scorers.judge.schemas import Intentions, SatisfactionVerdicts
from turnwatch.scorers.judge.task import Task, Unjudged
from turnwatch.scorers.judge.view import render
from turnwatch.scorers.scorer import Result

NAME = "conversation_completeness"


async def conversation_completeness(inputs: Inputs) -> Result:
    judge, usage = inputs.judge, inputs.usage
    user_lines = [line for line in inputs.lines if line.role.value == "user"]
    if not user_lines or len(user_lines) == len(inputs.lines):
        return inputs.unscored("no exchange between user and assistant")
    limit = inputs.config.max_intentions
    extraction = load("intentions")
    user_text = render(user_lines)
    if len(user_text) > judge.input_budget(extraction.overhead_chars):
        return inputs.unscored("context_overflow")
    answer = await judge.ask(
        Task(
            metric=NAME,
            prompt=extraction,
            values={"turns": user_text, "max": str(limit)},
            schema=Intentions,
            data=user_lines,
        ),
        usage,
    )
    if isinstance(answer, Unjudged):
        return inputs.unscored(answer.reason)
    intentions = [text.strip() for text in answer.value.intentions if text.strip()][:limit]
    if not intentions:
        return inputs.unscored("no user intentions found")
    listed = "\n".join(f"{number}. {text}" for number, text in enumerate(intentions))
    verification = load("satisfaction")
    transcript = render(inputs.lines)
    if len(transcript) > judge.input_budget(verification.overhead_chars + len(listed)):
        # Satisfaction may come many turns after the ask: chunks would judge it blind.
        return inputs.unscored("context_overflow", intentions=len(intentions))
    answer = await judge.ask(
        Task(
            metric=NAME,
            prompt=verification,
            values={"intentions": listed, "transcript": transcript},
            schema=SatisfactionVerdicts,
            data=(intentions, inputs.lines),
        ),
        usage,
    )
    if isinstance(answer, Unjudged):
        return inputs.unscored(answer.reason, intentions=len(intentions))
    verdicts = {
        item.intention: item.verdict
        for item in answer.value.verdicts
        if 0 <= item.intention < len(intentions)
    }
    if len(verdicts) < len(intentions):
        return inputs.unscored(
            "incomplete_verdict",
            intentions=len(intentions),
            missing_verdicts=len(intentions) - len(verdicts),
        )
    unmet = [number for number, verdict in sorted(verdicts.items()) if verdict == "no"]
    met = len(intentions) - len(unmet)
    explanation = f"{met} of {len(intentions)} user intentions satisfied"
    if unmet:
        explanation += f"; unmet intention numbers {', '.join(map(str, unmet))}"
    return inputs.scored(
        met / len(intentions),
        explanation,
        intentions=len(intentions),
        unmet_intentions=unmet,
    )
