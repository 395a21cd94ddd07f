"""Facts the user gave: asked for again (knowledge attrition) or overridden by a stale value.

Both work on slot values (`slots.py`), not on entity types: a value the user gave is known until
it is invalidated. It is invalidated by
- a revision: the user gives another value of a single-valued slot, or gives a new value with a
  revision marker ("actually", "I meant", "correction"), or announces a change naming the slot
  ("my email changed") without giving the value yet;
- a second instance: the user names another one of the slot ("I have a second order");
- a wrong record: a call made with the value returns an `error`, or the assistant says nothing
  matched it ("I couldn't find anything under ...").
An assistant question about a known slot that neither quotes a value, asks to confirm one ("...,
right?") nor offers more help ("anything else about your order?") is a re-ask. A value the user
replaced, used again by the assistant (in a call, or in text that does not also name the new
value), is a contradiction.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from turnwatch.scorers.checks.slots import any_values, slot_specs
from turnwatch.scorers.phrases import (
    CLOSING,
    NOT_FOUND,
    REVISION,
    asking_sentences,
    asks_to_act,
    tokens,
)
from turnwatch.scorers.scorer import Context, Draft, Result, counted
from turnwatch.scorers.sentences import is_question
from turnwatch.scorers.transcript import Call, json_text

from turnwatch.schema import Role
from turnwatch.scores import Evidence
from turnwatch.tokens import value_part

ANOTHER = re.compile(r"\b(another|second|other|one more|also have|two)\b", re.IGNORECASE)
# A question that states a value and asks the user to confirm it ("That's order X, right?").
CONFIRMING = re.compile(
    r"([,-]|\bthen)\s*(right|correct|yes|yeah|no|ok|okay|isn'?t it|as you said)\s*\?\s*$|"
    r"\bis (that|this|it) (still )?(right|correct|ok|okay|the one)\b|\bstill (right|correct)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class FactAsk:
    turn_index: int
    entity: str
    """The slot asked for (a token type for the built-in facts, else the slot's name)."""
    known_since: int | None = None


@dataclass(frozen=True, slots=True)
class Revision:
    turn_index: int
    entity: str


@dataclass(frozen=True, slots=True)
class StaleUse:
    turn_index: int
    token: str
    replaced_by: str | None
    replaced_at: int
    call: Call | None = None


@dataclass(slots=True)
class FactTimeline:
    asks: list[FactAsk] = field(default_factory=list)
    revisions: list[Revision] = field(default_factory=list)
    stale: list[StaleUse] = field(default_factory=list)

    def redundant_asks(self) -> list[FactAsk]:
        return [ask for ask in self.asks if ask.known_since is not None]


def timeline(ctx: Context) -> FactTimeline:
    return ctx.view("facts.timeline", lambda: _Walk(ctx).run())


def stale_calls(ctx: Context) -> list[StaleUse]:
    return [use for use in timeline(ctx).stale if use.call is not None]


@dataclass(slots=True)
class _Known:
    values: set[str]
    turn_index: int
    shown: str


class _Walk:
    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.specs = slot_specs(ctx)
        self.known: dict[str, _Known] = {}
        self.reopened: set[str] = set()
        self.reconfirm: set[str] = set()  # revised: the next assistant turn may confirm it
        # replaced value key -> (its token or 'a value', the new one's, the new value's keys, turn)
        self.superseded: dict[str, tuple[str, str, set[str], int]] = {}
        self.out = FactTimeline()

    def run(self) -> FactTimeline:
        for event in self.ctx.transcript.events:
            turn = event.turn
            if event.call is not None:
                if turn.role is Role.ASSISTANT:
                    self._call(event.call)
            elif turn.role is Role.USER:
                self._user(turn.index, turn.text or "")
            elif turn.role is Role.ASSISTANT:
                self._assistant(turn.index, turn.text or "")
        return self.out

    def _user(self, index: int, text: str) -> None:
        revising = REVISION.search(text) is not None
        for spec in self.specs:
            given = spec.given_in(text, by_name=not revising)
            previous = self.known.get(spec.name)
            if given:
                for key in given:
                    self.superseded.pop(key, None)
                if (
                    previous is not None
                    and previous.turn_index != index
                    and not (given & previous.values)
                    and (spec.single_valued or revising)
                ):
                    self.out.revisions.append(Revision(index, spec.name))
                    for key in previous.values:
                        self.superseded[key] = (previous.shown, _first(text, given), given, index)
                    self.reconfirm.add(spec.name)
                self.known[spec.name] = _Known(given, index, _first(text, given))
                self.reopened.discard(spec.name)
            elif (
                spec.names.search(text)
                and (revising or ANOTHER.search(text))
                and not is_question(text)
            ):
                if revising:
                    self.out.revisions.append(Revision(index, spec.name))
                self.reopened.add(spec.name)

    def _call(self, call: Call) -> None:
        self._stale_in(call.turn_index, json_text(call.call.arguments), call)
        result = call.call.result
        if call.failed or not (isinstance(result, dict) and "error" in result):
            return
        used = any_values(json_text(call.call.arguments))
        for name, known in self.known.items():
            if known.values & used:
                self.reopened.add(name)

    def _assistant(self, index: int, text: str) -> None:
        self._stale_in(index, text, None)
        if NOT_FOUND.search(text):
            quoted = any_values(text)
            for name, known in self.known.items():
                if known.values & quoted:
                    self.reopened.add(name)
        justified = NOT_FOUND.search(text) is not None
        for sentence in asking_sentences(text):
            # An offer of more help names topics ("anything about your workspace I can do?"),
            # it asks for no value.
            if CONFIRMING.search(sentence) or asks_to_act(sentence) or CLOSING.search(sentence):
                continue
            quoted = any_values(sentence)
            for spec in self.specs:
                if not spec.ask.search(sentence) or spec.values_in(sentence):
                    continue
                known = self.known.get(spec.name)
                if known is not None and known.values & quoted:
                    continue
                redundant = (
                    known is not None
                    and not justified
                    and spec.name not in self.reopened | self.reconfirm
                )
                self.out.asks.append(
                    FactAsk(index, spec.name, known.turn_index if redundant and known else None)
                )
        self.reconfirm.clear()

    def _keys(self, text: str) -> set[str]:
        keys = any_values(text)
        for spec in self.specs:
            keys |= spec.values_in(text)
        return keys

    def _stale_in(self, index: int, text: str, call: Call | None) -> None:
        if not self.superseded:
            return
        present = self._keys(text)
        for key in sorted(present & set(self.superseded)):
            if key not in self.superseded:
                continue
            replaced = self.superseded[key]
            old, new, new_keys, turn = replaced
            if call is None and new_keys & present:
                continue  # names the new value too: it reports the change
            self.out.stale.append(StaleUse(index, old, new, turn, call))
            for other in [k for k, value in self.superseded.items() if value is replaced]:
                del self.superseded[other]


def _first(text: str, keys: set[str]) -> str:
    """How the first of the value keys (in key order) that the text shows as a token appears in
    explanations: that token where it first occurs; the slot's own words never."""
    # Reversed, so a token's first occurrence is the one kept.
    shown = {f"h:{value_part(token)}": token for token, _ in reversed(tokens(text))}
    return next((shown[key] for key in sorted(keys) if key in shown), "a value")


def _entity(token: str) -> str | None:
    found = tokens(token)
    return found[0][1] if found else None


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
    drafts = [
        Draft(
            use.turn_index,
            f"uses {use.token} after the user replaced it"
            + (f" with {use.replaced_by}" if use.replaced_by.startswith("<") else "")
            + f" at turn {use.replaced_at}",
            evidence=Evidence(
                token=use.token if use.token.startswith("<") else None,
                entity=_entity(use.token),
                replaced_by=use.replaced_by if use.replaced_by.startswith("<") else None,
                related_turn_index=use.replaced_at,
                tool_call_id=use.call.call.id if use.call is not None else None,
                tool_name=use.call.name if use.call is not None else None,
            ),
        )
        for use in timeline(ctx).stale
    ]
    return counted(drafts)
