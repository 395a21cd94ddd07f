"""Failed tool calls and repeated calls: unrecovered errors, fabricated results, loops, and the
retries, alternatives and rechecks that are none of those."""

from __future__ import annotations

from benchmarks.corpus.builder import Builder
from benchmarks.corpus.episodes.authority import confirmed_action
from benchmarks.corpus.episodes.tasks import first_words, next_item
from benchmarks.corpus.phrases.recovery import (
    MOVES_ON,
    RECHECK,
    RETRY_PREAMBLE,
    THREE_ITEMS,
    THREE_SUMMARY,
)
from benchmarks.corpus.phrases.talk import PREAMBLE


def _ask_about_item(b: Builder) -> str:
    item = next_item(b)
    b.user_says(first_words(b, b.say(b.domain.lookup.ask, item=item)), facts=("item_id",))
    return item


def _failed_lookup(b: Builder, item: str) -> int:
    lookup = b.domain.lookup
    call = b.call(lookup.tool, {lookup.argument: item}, error="TimeoutError")
    return b.bot_calls(call, preamble=PREAMBLE)


def tool_failure(b: Builder, mode: str) -> None:
    """A failed call and what followed it."""
    d = b.domain
    on_side_effect = mode in ("recovery.honest_ack", "recovery.escalated") or (
        mode in ("tool_error.unrecovered", "recovery.retry_success") and b.chance(0.5)
    )
    if on_side_effect:
        confirmed_action(b, mode, key=b.rng.choice(["plain", "negative", "revisable"]))
        return
    if mode in ("tool_error.fabricated", "recovery.alternative_tool") and (
        mode == "recovery.alternative_tool" or b.chance(0.6)
    ):
        diagnostic = d.diagnostic
        b.user_says(first_words(b, b.say(diagnostic.request, item=b.slots["item"])))
        failed = b.call(diagnostic.tool, diagnostic.arguments(b.slots), error=diagnostic.error)
        turn = b.bot_calls(failed, preamble=PREAMBLE)
        if mode == "tool_error.fabricated":
            text = b.say(diagnostic.fabricated, item=b.slots["item"])
            b.defect(mode, b.bot_says(text), failed_turn=turn, variant="diagnostic")
            return
        result, slots = diagnostic.alternative_result(b.rng, b.slots)
        alternative = b.call(diagnostic.alternative, diagnostic.alternative_arguments(b.slots))
        alternative.result = result
        b.bot_calls(alternative)
        b.near_miss(
            mode, b.bot_says(b.say(diagnostic.alternative_answer, **slots)), failed_turn=turn
        )
        return
    item = _ask_about_item(b)
    turn = _failed_lookup(b, item)
    if mode == "tool_error.unrecovered":
        b.defect(mode, b.bot_says(b.say(MOVES_ON)), failed_turn=turn, variant="moves_on")
        return
    if mode == "tool_error.fabricated":
        _, invented = d.lookup.record(b.rng, item, [b.user])
        text = b.say(d.lookup.answer, **{**invented, "item": item})
        b.defect(mode, b.bot_says(text), failed_turn=turn, variant="lookup")
        return
    # recovery.retry_success on a read
    lookup = d.lookup
    record, slots = b.record(item, [b.user])
    b.looked_up.add(item)
    retry = b.call(lookup.tool, {lookup.argument: item}, record)
    b.bot_calls(retry, preamble=RETRY_PREAMBLE)
    answer = b.say(lookup.answer, **{**slots, "item": item})
    b.near_miss(mode, b.bot_says(answer), failed_turn=turn)


def repeated_calls(b: Builder, mode: str) -> None:
    """Several calls of one tool: a loop, or retries / distinct items / rechecks that are not."""
    d = b.domain
    lookup = d.lookup
    if mode == "loop.distinct_arguments":
        items = [next_item(b), d.item_id(b.rng), d.item_id(b.rng)]
        names = ("first", "second", "third")
        named = {f"{name}_item": item for name, item in zip(names, items, strict=True)}
        b.user_says(first_words(b, b.say(THREE_ITEMS, **named)))
        summary: dict[str, str] = {}
        calls = []
        for name, item in zip(names, items, strict=True):
            record, slots = b.record(item, [b.user])
            b.looked_up.add(item)
            calls.append(b.call(lookup.tool, {lookup.argument: item}, record))
            summary.update({f"{name}_item": item, f"{name}_status": slots["status_text"]})
        if b.chance(0.5):
            turn = b.bot_calls(*calls, preamble=PREAMBLE)
        else:
            turn = [b.bot_calls(call, preamble=PREAMBLE) for call in calls][-1]
        b.near_miss(mode, turn, tool=lookup.tool)
        b.bot_says(b.say(THREE_SUMMARY, **summary))
        return
    item = _ask_about_item(b)
    record, slots = b.record(item, [b.user])
    b.looked_up.add(item)
    arguments = {lookup.argument: item}
    if mode == "loop.user_requested_recheck":
        for round_ in range(3):
            turn = b.bot_calls(b.call(lookup.tool, arguments, record), preamble=PREAMBLE)
            b.bot_says(b.say(lookup.answer, **{**slots, "item": item}))
            if round_ < 2:
                b.user_says(b.pick(RECHECK))
        b.near_miss(mode, turn, tool=lookup.tool)
        return
    if mode == "loop.retry_after_timeouts":
        b.bot_calls(b.call(lookup.tool, arguments, error="TimeoutError"), preamble=PREAMBLE)
        b.bot_calls(b.call(lookup.tool, arguments, error="TimeoutError"), preamble=RETRY_PREAMBLE)
        turn = b.bot_calls(b.call(lookup.tool, arguments, record), preamble=RETRY_PREAMBLE)
        b.near_miss(mode, turn, tool=lookup.tool, failures=2)
        b.bot_says(b.say(lookup.answer, **{**slots, "item": item}))
        return
    # tool_loop: identical successful calls, no progress between them
    count = b.rng.choice([3, 3, 4, 5])
    if b.chance(0.25):
        turn = b.bot_calls(*(b.call(lookup.tool, arguments, record) for _ in range(count)))
        variant = "parallel"
    else:
        turns = [
            b.bot_calls(b.call(lookup.tool, arguments, record), preamble=PREAMBLE)
            for _ in range(count)
        ]
        turn, variant = turns[2], "sequential"
    b.defect(mode, turn, tool=lookup.tool, calls=count, variant=variant)
    b.bot_says(b.say(lookup.answer, **{**slots, "item": item}))
