"""Trajectory level: no-progress turns, unnecessary clarifications, identical tool call loops."""

from __future__ import annotations

import json
import re
from collections import deque
from itertools import pairwise

from turnwatch.scorers.checks.facts import timeline
from turnwatch.scorers.phrases import CLOSING, asking_sentences
from turnwatch.scorers.scorer import Context, Draft, Result, call_evidence, counted
from turnwatch.scorers.transcript import Call

from turnwatch.schema import Role
from turnwatch.scores import Evidence, Severity
from turnwatch.tokens import TOKEN

_WORD = re.compile(rf"{TOKEN.pattern}|\w+")
_MIN_WORDS = 4


def _shingles(text: str) -> frozenset[tuple[str, str]]:
    words = [match.group(0).casefold() for match in _WORD.finditer(text)]
    if len(words) < _MIN_WORDS:
        return frozenset()
    return frozenset(pairwise(words))


def near_duplicates(ctx: Context) -> Result:
    """An assistant text nearly identical to one of the last few (word-bigram Jaccard)."""
    window: deque[tuple[int, frozenset[tuple[str, str]]]] = deque(
        maxlen=ctx.config.near_duplicate_window
    )
    threshold = ctx.config.near_duplicate_similarity
    drafts = []
    for turn in ctx.transcript.texts(Role.ASSISTANT):
        shingles = _shingles(turn.text)
        if shingles:
            for earlier_index, earlier in window:
                overlap = len(shingles & earlier) / len(shingles | earlier)
                if overlap >= threshold:
                    drafts.append(
                        Draft(
                            turn.index,
                            f"repeats assistant turn {earlier_index} "
                            f"(similarity {overlap:.2f}) without progress",
                            Severity.WARNING,
                            Evidence(
                                related_turn_index=earlier_index,
                                measured=round(overlap, 4),
                                limit=threshold,
                            ),
                        )
                    )
                    break
            window.append((turn.index, shingles))
    return counted(drafts)


def clarifications(ctx: Context) -> Result:
    """Questions to the user beyond the allowance, or asking for facts the user already gave."""
    allowance = ctx.config.max_clarifications
    if ctx.contract is not None and ctx.contract.max_clarifications is not None:
        allowance = ctx.contract.max_clarifications
    redundant = {ask.turn_index: ask for ask in timeline(ctx).redundant_asks()}
    asked = 0
    drafts = []
    for turn in ctx.transcript.texts(Role.ASSISTANT):
        questions = [s for s in asking_sentences(turn.text) if s.rstrip().endswith("?")]
        if turn.tool_calls or not any(not CLOSING.search(s) for s in questions):
            continue
        asked += 1
        ask = redundant.get(turn.index)
        if ask is not None:
            drafts.append(
                Draft(
                    turn.index,
                    "clarification asks for a fact already given",
                    Severity.WARNING,
                    Evidence(entity=ask.entity, related_turn_index=ask.known_since),
                )
            )
        elif asked > allowance:
            drafts.append(
                Draft(
                    turn.index,
                    f"clarifying question {asked} exceeds the allowance of {allowance}",
                    Severity.WARNING,
                    Evidence(rule="max_clarifications", measured=asked, limit=allowance),
                )
            )
    return counted(drafts)


def _signature(call: Call) -> str:
    return call.name + "\x00" + json.dumps(call.call.arguments, sort_keys=True, default=str)


def tool_loop(ctx: Context) -> Result:
    """A run of identical calls (same tool, same arguments) at least `tool_loop_length` long."""
    length = ctx.config.tool_loop_length
    drafts = []
    previous, run = None, 0
    for call in ctx.transcript.calls:
        signature = _signature(call)
        run = run + 1 if signature == previous else 1
        previous = signature
        if run == length:
            drafts.append(
                Draft(
                    call.turn_index,
                    f"{call.name} called {length} times in a row with identical arguments",
                    evidence=call_evidence(call),
                )
            )
    return counted(drafts)
