"""Facts the user gave: asked for again (knowledge attrition) or overridden by a stale value.

Both work without a judge from the de-identification tokens: a user turn containing an
`<EMAIL_ADDRESS_...>` token has given an e-mail address; an assistant sentence asking for "your
e-mail" without quoting a token asks for it. A revision (a different value of a single-valued fact
in a later user turn, or the user announcing a change) re-opens the fact for one assistant turn,
so re-confirming a revised value is not attrition.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from turnwatch.scorers.phrases import (
    FACT_QUESTIONS,
    REVISION,
    SINGLE_VALUED,
    asking_sentences,
    tokens,
)
from turnwatch.scorers.scorer import Context, Draft, Result, counted
from turnwatch.scorers.transcript import json_tokens

from turnwatch.schema import Role
from turnwatch.scores import Evidence
from turnwatch.tokens import value_part


@dataclass(frozen=True, slots=True)
class FactAsk:
    turn_index: int
    entity: str
    known_since: int | None = None


@dataclass(frozen=True, slots=True)
class Revision:
    turn_index: int
    entity: str


@dataclass(slots=True)
class FactTimeline:
    asks: list[FactAsk]
    revisions: list[Revision]

    def redundant_asks(self) -> list[FactAsk]:
        return [ask for ask in self.asks if ask.known_since is not None]


def fact_patterns(ctx: Context) -> dict[str, re.Pattern[str]]:
    extra = ctx.contract.fact_questions if ctx.contract is not None else {}
    return {
        entity: re.compile(pattern, re.IGNORECASE)
        for entity, pattern in {**FACT_QUESTIONS, **extra}.items()
    }


def timeline(ctx: Context) -> FactTimeline:
    patterns = fact_patterns(ctx)
    given: dict[str, tuple[str, int]] = {}  # entity -> (latest token, turn it was given in)
    reopened: set[str] = set()
    asks: list[FactAsk] = []
    revisions: list[Revision] = []
    for turn in ctx.transcript.turns:
        if not turn.text:
            continue
        found = ctx.transcript.text_tokens[turn.index]
        if turn.role is Role.USER:
            for token, entity in found:
                previous = given.get(entity)
                if (
                    previous is not None
                    and entity in SINGLE_VALUED
                    and previous[1] != turn.index
                    and value_part(previous[0]) != value_part(token)
                ):
                    revisions.append(Revision(turn.index, entity))
                    reopened.add(entity)
                given[entity] = (token, turn.index)
            if REVISION.search(turn.text):
                supplied = {entity for _, entity in found}
                for entity, pattern in patterns.items():
                    if entity not in supplied and pattern.search(turn.text):
                        revisions.append(Revision(turn.index, entity))
                        reopened.add(entity)
        elif turn.role is Role.ASSISTANT:
            for sentence in asking_sentences(turn.text):
                quoted = {entity for _, entity in tokens(sentence)}
                for entity, pattern in patterns.items():
                    if entity in quoted or not pattern.search(sentence):
                        continue
                    known = entity in given and entity not in reopened
                    asks.append(FactAsk(turn.index, entity, given[entity][1] if known else None))
            reopened.clear()
    return FactTimeline(asks, revisions)


def knowledge_attrition(ctx: Context) -> Result:
    drafts = [
        Draft(
            ask.turn_index,
            f"asks for {ask.entity} although the user gave it at turn {ask.known_since} "
            "and has not revised it since",
            evidence=Evidence(entity=ask.entity, related_turn_index=ask.known_since),
        )
        for ask in timeline(ctx).redundant_asks()
    ]
    return counted(drafts)


def contradictions(ctx: Context) -> Result:
    """Unresolved contradictions: the assistant keeps using a value the user has since replaced."""
    latest: dict[str, tuple[str, int]] = {}
    superseded: dict[str, tuple[str, int]] = {}  # old value hex -> (new token, turn revised)
    reported: set[str] = set()
    drafts = []
    for event in ctx.transcript.events:
        turn = event.turn
        if turn.role is Role.USER and event.call is None:
            for token, entity in ctx.transcript.text_tokens[turn.index]:
                if entity not in SINGLE_VALUED:
                    continue
                superseded.pop(value_part(token), None)
                previous = latest.get(entity)
                if (
                    previous
                    and previous[1] != turn.index
                    and value_part(previous[0]) != value_part(token)
                ):
                    superseded[value_part(previous[0])] = (token, turn.index)
                latest[entity] = (token, turn.index)
            continue
        if turn.role is not Role.ASSISTANT:
            continue
        call = event.call
        emitted = (
            ctx.transcript.text_tokens[turn.index]
            if call is None
            else json_tokens(call.call.arguments)
        )
        for token, entity in emitted:
            replaced = superseded.get(value_part(token))
            if replaced is not None and token not in reported:
                reported.add(token)
                drafts.append(
                    Draft(
                        turn.index,
                        f"uses {token} after the user replaced it with {replaced[0]} "
                        f"at turn {replaced[1]}",
                        evidence=Evidence(
                            token=token,
                            entity=entity,
                            replaced_by=replaced[0],
                            related_turn_index=replaced[1],
                            tool_call_id=call.call.id if call is not None else None,
                            tool_name=call.name if call is not None else None,
                        ),
                    )
                )
    return counted(drafts)
