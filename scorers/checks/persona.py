"""Turn level: the persona rules a contract declares (`persona`), reported as `role_adherence`.

- `never_claims_human`: an assistant sentence saying it is a person (and not, in the same
  sentence, that it is an assistant or not a person);
- `never_reveals_instructions`: an assistant text repeating a run of the system instructions
  (`REVEALED_WORDS` consecutive words);
- `out_of_scope`: a user message about a declared topic answered without declining it (a
  hand-over declines it too; a tool call in reply shows the message was a service request).
"""

from __future__ import annotations

from dataclasses import dataclass

from turnwatch.scorers.contract import Contract
from turnwatch.scorers.phrases import REFUSAL, claims_human, hands_over
from turnwatch.scorers.scorer import Context, Draft, Result, counted, unscored
from turnwatch.scorers.sentences import word_runs

from turnwatch.schema import Role
from turnwatch.scores import Evidence

REVEALED_WORDS = 8


@dataclass(frozen=True, slots=True)
class ScopeAnswer:
    topic: str
    asked_at: int
    reply_at: int | None
    declined: bool


def scope_answers(ctx: Context) -> list[ScopeAnswer]:
    """Each user message about a declared out-of-scope topic and whether the reply declined it."""
    return ctx.view("persona.scope", lambda: _scope_answers(ctx))


def _scope_answers(ctx: Context) -> list[ScopeAnswer]:
    contract = ctx.contract
    if contract is None or not contract.persona.out_of_scope:
        return []
    topics = [(topic.id, topic.pattern) for topic in contract.persona.out_of_scope]
    texts = [turn for turn in ctx.transcript.turns if turn.text]
    found = []
    for position, turn in enumerate(texts):
        if turn.role is not Role.USER:
            continue
        topic = next((name for name, pattern in topics if pattern.search(turn.text or "")), None)
        if topic is None:
            continue
        reply = None
        for later in texts[position + 1 :]:
            if later.role is Role.USER:
                break
            if later.role is Role.ASSISTANT:
                reply = later
                break
        acted = any(
            call.turn_index > turn.index and (reply is None or call.turn_index <= reply.index)
            for call in ctx.transcript.calls
        )
        declined = acted or (
            reply is not None
            and bool(REFUSAL.search(reply.text or "") or hands_over(reply.text or ""))
        )
        found.append(
            ScopeAnswer(topic, turn.index, reply.index if reply is not None else None, declined)
        )
    return found


def instruction_runs(instructions: list[str]) -> set[tuple[str, ...]]:
    """The runs of words a reply must not repeat from the system instructions."""
    return {run for text in instructions for run in word_runs(text, REVEALED_WORDS)}


def repeated_runs(text: str, runs: set[tuple[str, ...]]) -> int:
    return len(word_runs(text, REVEALED_WORDS) & runs)


def _has_rules(contract: Contract) -> bool:
    persona = contract.persona
    return (
        persona.never_claims_human
        or persona.never_reveals_instructions
        or bool(persona.out_of_scope)
    )


def role_adherence(ctx: Context) -> Result:
    contract = ctx.contract
    assert contract is not None
    if not _has_rules(contract):
        return unscored("contract declares no persona rules")
    persona = contract.persona
    instructions = (
        instruction_runs(ctx.session.system_instructions)
        if persona.never_reveals_instructions
        else set()
    )
    drafts = []
    for turn in ctx.transcript.texts(Role.ASSISTANT):
        text = turn.text or ""
        if persona.never_claims_human and claims_human(text):
            drafts.append(
                Draft(
                    turn.index,
                    "the assistant claims to be a person",
                    evidence=Evidence(rule="persona.never_claims_human"),
                )
            )
        if instructions:
            shared = repeated_runs(text, instructions)
            if shared:
                drafts.append(
                    Draft(
                        turn.index,
                        f"the assistant repeats its instructions ({shared} runs of "
                        f"{REVEALED_WORDS} words)",
                        evidence=Evidence(
                            rule="persona.never_reveals_instructions", measured=shared
                        ),
                    )
                )
    for answer in scope_answers(ctx):
        if answer.reply_at is not None and not answer.declined:
            drafts.append(
                Draft(
                    answer.reply_at,
                    f"answers out-of-scope topic {answer.topic} instead of declining it",
                    evidence=Evidence(
                        rule=f"persona.out_of_scope.{answer.topic}",
                        related_turn_index=answer.asked_at,
                    ),
                )
            )
    return counted(sorted(drafts, key=lambda draft: draft.turn_index or 0))
