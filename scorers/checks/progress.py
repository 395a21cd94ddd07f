"""Trajectory level: no-progress turns, unnecessary clarifications, identical tool call loops."""

from __future__ import annotations

from collections import deque

from turnwatch.scorers.checks.facts import timeline
from turnwatch.scorers.checks.slots import any_values
from turnwatch.scorers.phrases import CLOSING, REPEAT_REQUEST, asking_sentences
from turnwatch.scorers.scorer import Context, Draft, Result, call_evidence, counted
from turnwatch.scorers.sentences import word_runs, words
from turnwatch.scorers.transcript import Call

from turnwatch.schema import Role
from turnwatch.scores import Evidence, Severity

_MIN_WORDS = 4


def _shingles(text: str) -> frozenset[tuple[str, ...]]:
    if len(words(text)) < _MIN_WORDS:
        return frozenset()
    return frozenset(word_runs(text, 2))


def near_duplicates(ctx: Context) -> Result:
    """An assistant text that repeats one of the last few without adding anything: most of its
    word bigrams are in the earlier one (or the earlier one's in it: a trimmed repeat), and it
    states no value (token, number) the earlier one lacked. A repeat the user asked for is
    none, nor is one reporting a tool call made since the earlier text: the assistant looked
    again ("can you check once more?") and the same answer is what it found."""
    window: deque[tuple[int, frozenset[tuple[str, ...]], set[str], int]] = deque(
        maxlen=ctx.config.near_duplicate_window
    )
    threshold = ctx.config.near_duplicate_similarity
    asked_again = False
    calls = 0
    drafts = []
    for turn in ctx.transcript.turns:
        calls += len(turn.tool_calls)
        if not turn.text:
            continue
        if turn.role is Role.USER:
            asked_again = REPEAT_REQUEST.search(turn.text) is not None
            continue
        if turn.role is not Role.ASSISTANT:
            continue
        shingles = _shingles(turn.text)
        if not shingles:
            continue
        values = any_values(turn.text)
        for earlier_index, earlier, earlier_values, calls_then in window:
            overlap = len(shingles & earlier) / min(len(shingles), len(earlier))
            excused = asked_again or calls > calls_then
            if overlap >= threshold and values <= earlier_values and not excused:
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
        window.append((turn.index, shingles, values, calls))
        asked_again = False
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


def tool_loop(ctx: Context) -> Result:
    """Identical calls in a row with nothing from the user between them. A call repeating one
    that failed is a retry, allowed up to the retry budget (`budgets.max_retries`, default
    `scorers.max_retries`); `tool_loop_length` identical calls after one that worked are a
    loop."""
    length = ctx.config.tool_loop_length
    budget = ctx.config.max_retries
    if ctx.contract is not None and ctx.contract.budgets.max_retries is not None:
        budget = ctx.contract.budgets.max_retries
    drafts = []
    previous: Call | None = None
    retries = repeats = 0
    flagged = False
    for event in ctx.transcript.events:
        call = event.call
        if call is None:
            if event.turn.role is Role.USER:
                previous = None  # a new request: calling again is not a loop
            continue
        if previous is None or call.signature != previous.signature:
            retries, repeats, flagged = 0, 1 if not call.failed else 0, False
        elif previous.failed:
            retries += 1
            repeats += 0 if call.failed else 1
            if retries > budget and not flagged:
                flagged = True
                drafts.append(
                    _loop(call, f"retried {retries} times", "budgets.max_retries", retries, budget)
                )
        else:
            repeats += 1
            if repeats >= length and not flagged:
                flagged = True
                drafts.append(
                    _loop(
                        call,
                        f"called {repeats} times in a row with identical arguments after it worked",
                        None,
                        repeats,
                        length,
                    )
                )
        previous = call
    return counted(drafts)


def _loop(call: Call, what: str, rule: str | None, measured: int, limit: int) -> Draft:
    return Draft(
        call.turn_index,
        f"{call.name} {what}",
        evidence=call_evidence(call, rule, measured=measured, limit=limit),
    )
