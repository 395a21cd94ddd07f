"""The simulated user's side of a scenario, read from the recorded conversation.

The evaluation guide asks a simulated user for a goal, private state, an information-release
schedule, behaviour, a stopping rule and prohibited cooperation. All of it is read from the
recorded user turns, with the contract's question patterns:

- private state: every fact the user gave (a de-identification token in a user turn), named by
  the contract's required fact of that token type (else by the type);
- release schedule: a fact given right after the assistant asked for it is given *when asked*
  (`Release.WHEN_ASKED`, with the recorded answer); a fact the user brought in unprompted is given
  *at its turn* (`Release.AT_TURN`: with the scripted turn that carried it, not before);
- behaviour: the user's own turns in order (`script`): the goal, follow-ups, and revisions
  (corrections) as recorded;
- prohibited cooperation: the user accepts only the side effects the recorded user confirmed
  (`authorised`: a yes to a confirmation question, and the side-effect tool called next);
  everything else asked to be confirmed is declined;
- stopping rule: success condition met, hand-over to a human, a user-turn budget (the contract's
  `max_user_turns`, else twice the recorded user turns plus two), or giving up after
  `give_up_after` assistant replies in a row without progress (failed calls, refusals, the same
  answer again).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import Field
from turnwatch.exporters.regressions.scenario import Scenario
from turnwatch.scorers.checks.slots import asked_slots, token_specs
from turnwatch.scorers.contract import Contract
from turnwatch.scorers.phrases import (
    REVISION,
    SINGLE_VALUED,
    confirmation_requests,
    is_consent,
    says_no,
    tokens,
)

from turnwatch.schema import Role, WireModel
from turnwatch.tokens import value_part

GIVE_UP_AFTER = 3
# Words of a tool name that say what it does, not what it does it to ("issue_refund": refund).
_VERBS = frozenset({"issue", "update", "request", "record", "lookup", "get", "set", "make", "do"})


class Release(StrEnum):
    WHEN_ASKED = "when_asked"
    AT_TURN = "at_turn"


class Fact(WireModel):
    id: str = Field(description="The contract's required fact of this token type, else the type.")
    entity: str
    value: str = Field(description="The token the user gave.")
    release: Release
    answer: str | None = Field(
        default=None, description="The recorded answer that gave it (when asked)."
    )
    script_turn: int | None = Field(default=None, description="The scripted turn that gives it.")


class ScriptTurn(WireModel):
    text: str
    kind: Literal["goal", "follow_up", "revision"]


class Authorisation(WireModel):
    tool: str | None = Field(description="The side effect the recorded yes was followed by.")
    answer: str


class StopRule(WireModel):
    max_user_turns: int = Field(gt=0)
    give_up_after: int = Field(default=GIVE_UP_AFTER, gt=0)


class UserProfile(WireModel):
    scenario_id: str
    goal: str
    facts: list[Fact]
    script: list[ScriptTurn]
    authorised: list[Authorisation]
    stop: StopRule

    def known(self, entity: str) -> list[Fact]:
        return [fact for fact in self.facts if fact.entity == entity]


def profile_of(scenario: Scenario, contract: Contract | None) -> UserProfile:
    slots = token_specs(contract)
    fact_ids = _fact_ids(contract)
    effects = side_effects(contract)
    facts: list[Fact] = []
    script: list[ScriptTurn] = []
    authorised: list[Authorisation] = []
    asked_text = ""  # what the assistant said since the user last spoke
    for position, turn in enumerate(scenario.turns):
        if turn.role is Role.ASSISTANT:
            asked_text += f" {turn.content or ''}"
            continue
        if turn.role is not Role.USER:
            continue
        text = turn.content or ""
        given = tokens(text)
        asked = set(asked_slots(asked_text, slots))
        confirm = bool(confirmation_requests(asked_text))
        asked_text = ""
        if asked & {entity for _, entity in given}:
            facts += _facts(given, fact_ids, Release.WHEN_ASKED, answer=text)
        elif confirm and is_consent(text):
            tool = _next_side_effect(scenario, position, effects)
            authorised.append(Authorisation(tool=tool, answer=text))
        elif confirm and says_no(text):
            continue  # a recorded "no": the simulated user declines by itself
        else:
            kind = "goal" if not script else _kind(text, given, facts)
            facts += _facts(given, fact_ids, Release.AT_TURN, script_turn=len(script))
            script.append(ScriptTurn(text=text, kind=kind))
    recorded = len(scenario.user_turns())
    budget = contract.budgets.max_user_turns if contract is not None else None
    return UserProfile(
        scenario_id=scenario.scenario_id,
        goal=scenario.goal,
        facts=facts,
        script=script,
        authorised=authorised,
        stop=StopRule(max_user_turns=budget or 2 * recorded + 2),
    )


def _facts(
    given: list[tuple[str, str]],
    fact_ids: dict[str, str],
    release: Release,
    answer: str | None = None,
    script_turn: int | None = None,
) -> list[Fact]:
    return [
        Fact(
            id=fact_ids.get(entity, entity),
            entity=entity,
            value=token,
            release=release,
            answer=answer,
            script_turn=script_turn,
        )
        for token, entity in given
    ]


def _fact_ids(contract: Contract | None) -> dict[str, str]:
    if contract is None:
        return {}
    return {entity: fact.id for fact in contract.required_facts for entity in fact.entities}


def side_effects(contract: Contract | None) -> set[str]:
    if contract is None:
        return set()
    return {name for name, tool in contract.tools.items() if tool.side_effect}


def _next_side_effect(scenario: Scenario, position: int, effects: set[str]) -> str | None:
    for turn in scenario.turns[position + 1 :]:
        if turn.role is Role.USER:
            return None
        for call in turn.tool_calls or []:
            if call.name in effects or not effects:
                return call.name
    return None


def _kind(text: str, given: list[tuple[str, str]], facts: list[Fact]) -> str:
    if REVISION.search(text):
        return "revision"
    for token, entity in given:
        if entity in SINGLE_VALUED and any(
            fact.entity == entity and value_part(fact.value) != value_part(token) for fact in facts
        ):
            return "revision"
    return "follow_up"


def tool_words(tool: str) -> set[str]:
    """What a confirmation question about `tool` would mention ("issue_refund": refund)."""
    return {word for word in tool.lower().split("_") if len(word) > 2 and word not in _VERBS}
