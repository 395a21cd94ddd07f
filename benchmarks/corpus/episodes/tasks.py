"""The plain building blocks: opening, closing, questions, lookups, diagnostics.

Every episode starts with a user message and ends with an assistant message, so episodes can
be put in any order. Modes plant near misses on a lookup (records that are the user's own or
shared with the user, two parallel answers, a lookup that found nothing).
"""

from __future__ import annotations

from benchmarks.corpus.builder import Builder
from benchmarks.corpus.domain import Faq
from benchmarks.corpus.phrases.memory import ITEM_RETRY, OTHER_ITEM_QUESTION, SORRY_NOT_FOUND
from benchmarks.corpus.phrases.persona import OFF_SCOPE, REFUSE_OFF_SCOPE
from benchmarks.corpus.phrases.talk import (
    ANSWER_LEAD,
    ASK_IDENTITY,
    GIVE_IDENTITY,
    GOODBYE,
    GREETING,
    HANDOFF_REQUEST,
    HANDOFF_SAY,
    PREAMBLE,
    THANKS,
    VERIFIED,
    WELCOME,
)


def first_words(b: Builder, text: str) -> str:
    """The conversation's first message sometimes opens with a greeting."""
    if b.messages or not b.chance(0.6):
        return text
    greeting = b.pick(GREETING)
    return f"{greeting} {text}" if greeting.endswith(",") else f"{greeting}! {text}"


def opening(b: Builder) -> None:
    d = b.domain
    style = b.rng.choice(["none", "greet", "verify", "verify"])
    if style == "none":
        return
    if style == "greet":
        b.user_says(f"{b.pick(GREETING)}!")
        b.bot_says(b.say(WELCOME))
        return
    b.user_says(first_words(b, b.pick(d.openers)))
    by = d.verify_argument
    b.bot_says(b.say(ASK_IDENTITY[by]))
    value = b.user.email if by == "email" else b.user.phone
    b.user_says(b.say(GIVE_IDENTITY[by], value=value), facts=(by,))
    b.typed(by, value)
    b.slots["verified_by"] = by
    record = {"customer_id": b.user.customer_id, "customer_name": b.user.name, by: value}
    b.bot_calls(b.call(d.verify_tool, {by: value}, record), preamble=PREAMBLE)
    b.bot_says(b.say(VERIFIED))


def closing(b: Builder, outcome: str) -> None:
    d = b.domain
    if outcome == "handed_off":
        b.user_says(b.pick(HANDOFF_REQUEST))
        b.bot_calls(b.call(d.handoff_tool, {}, {"ok": True, "queue": "general"}))
        b.bot_says(b.pick(HANDOFF_SAY))
        return
    if outcome == "refused":
        questions, _ = b.rng.choice(OFF_SCOPE)
        b.user_says(b.pick(questions))
        b.near_miss("persona.required_refusal", b.bot_says(b.say(REFUSE_OFF_SCOPE)))
    b.user_says(b.pick(THANKS))
    if outcome == "resolved":
        b.bot_calls(b.call(d.resolution_tool, {"outcome": "resolved"}, {"ok": True}))
    b.bot_says(b.say(GOODBYE))


def faq(b: Builder, topic: Faq | None = None, question: str | None = None) -> tuple[int, str]:
    """A question and its answer; returns the answer's turn and text."""
    topic = topic or b.topic()
    b.user_says(first_words(b, question or b.pick(topic.questions)))
    answer = b.pick(ANSWER_LEAD) + b.pick(topic.answers) if b.chance(0.4) else b.pick(topic.answers)
    return b.bot_says(answer), answer


def small_talk(b: Builder) -> None:
    """A filler exchange: a fresh question or a public place; nothing when both are used up."""
    if "public" not in b.used_topics and b.chance(0.25):
        public_question(b)
        return
    topic = b.fresh_topic()
    if topic is not None:
        faq(b, topic)
    elif "public" not in b.used_topics:
        public_question(b)


def next_item(b: Builder) -> str:
    """The conversation's item, or another of the user's once it has been looked up (nobody
    asks twice for one status)."""
    item = b.slots["item"]
    return b.domain.item_id(b.rng) if item in b.looked_up else item


def public_question(b: Builder) -> None:
    """The user names one of the business's public places (a store, a branch): not PII."""
    b.used_topics.add("public")
    public = b.rng.choice(b.domain.public_values)
    b.user_says(first_words(b, b.say(b.domain.public_ask, public=public)))
    b.typed_public(public)
    b.bot_says(b.say(b.domain.public_answer, public=public))


def read_item(b: Builder, item: str, owners: list | None = None) -> tuple[int, dict, dict]:
    """The lookup call for one item: (turn, record, answer slots)."""
    lookup = b.domain.lookup
    record, slots = b.record(item, owners or [b.user])
    b.looked_up.add(item)
    turn = b.bot_calls(b.call(lookup.tool, {lookup.argument: item}, record), preamble=PREAMBLE)
    return turn, record, slots


def lookup(b: Builder, mode: str | None = None) -> None:
    d = b.domain
    item = next_item(b)
    if mode == "reask.after_wrong_record":
        typo = d.item_id(b.rng)
        b.user_says(first_words(b, b.say(d.lookup.ask, item=typo)))
        b.bot_calls(b.call(d.lookup.tool, {d.lookup.argument: typo}, d.lookup.not_found))
        b.near_miss(mode, b.bot_says(b.say(SORRY_NOT_FOUND, wrong=typo)), fact="item_id")
        b.user_says(b.say(ITEM_RETRY, item=item))
    else:
        b.user_says(first_words(b, b.say(d.lookup.ask, item=item)), facts=("item_id",))
    if mode == "cross_user.tool_record":
        stranger = b.world.stranger(b.rng)
        record_turn, _, slots = read_item(b, item, [stranger])
        turn = b.bot_says(b.say(d.lookup.foreign, item=item, **slots))
        b.defect(mode, turn, owner=stranger.customer_id, record_turn=record_turn)
        return
    if mode == "cross_user.joint_account":
        coowner = b.world.stranger(b.rng)
        _, _, slots = read_item(b, item, [coowner, b.user])
        b.near_miss(mode, b.bot_says(b.say(d.lookup.joint, item=item, **slots)))
        return
    _, _, slots = read_item(b, item)
    if mode == "cross_user.own_record":
        b.near_miss(mode, b.bot_says(b.say(d.lookup.own_readback, item=item, **slots)))
        return
    template = b.pick(d.lookup.answer)
    b.bot_says(template.format(**{**b.slots, **slots, "item": item}))
    if mode == "repeat.parallel_answers":
        second = d.item_id(b.rng)
        b.user_says(b.say(OTHER_ITEM_QUESTION, item=second))
        _, _, other = read_item(b, second)
        text = template.format(**{**b.slots, **other, "item": second})
        b.near_miss(mode, b.bot_says(text))


def diagnose(b: Builder, mode: str | None = None) -> None:
    d = b.domain
    b.user_says(first_words(b, b.say(d.diagnostic.request, item=b.slots["item"])))
    result, slots = d.diagnostic.result(b.rng, b.slots)
    arguments = d.diagnostic.arguments(b.slots)
    b.bot_calls(b.call(d.diagnostic.tool, arguments, result), preamble=PREAMBLE)
    b.bot_says(b.say(d.diagnostic.answer, **slots))


def off_scope_refusal(b: Builder) -> int:
    questions, _ = b.rng.choice(OFF_SCOPE)
    b.user_says(first_words(b, b.pick(questions)))
    return b.bot_says(b.say(REFUSE_OFF_SCOPE))
