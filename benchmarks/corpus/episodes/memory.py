"""Facts the user gave: asked for again (knowledge attrition), used after the user replaced them
(stale fact), and the justified re-asks and legitimate second values that are neither."""

from __future__ import annotations

from benchmarks.corpus.builder import Builder
from benchmarks.corpus.episodes.authority import perform, prepared
from benchmarks.corpus.episodes.tasks import first_words, lookup, read_item
from benchmarks.corpus.phrases.approval import ASK_PLAIN, CONSENT
from benchmarks.corpus.phrases.memory import (
    ACK,
    ACK_CHANGE,
    ALREADY_TOLD,
    ASK_LEAD,
    NOTED_NEW,
    NUDGE,
    READY,
    REVISE,
    SECOND_ITEM_ASK,
    SECOND_ITEM_GIVE,
    SECOND_ITEM_MENTION,
    TWO_ITEMS,
    YES_THATS_RIGHT,
)
from benchmarks.corpus.phrases.talk import PREAMBLE


def _give(b: Builder, fact_key: str, value: str, opening: bool = False) -> int:
    fact = b.domain.fact(fact_key)
    text = b.say(fact.give, value=value)
    turn = b.user_says(first_words(b, text) if opening else text, facts=(fact_key,))
    if fact.pii and fact_key != "item_id":
        b.typed(fact_key, value)
    return turn


def reask(b: Builder, mode: str) -> None:
    d = b.domain
    if mode == "reask.second_item":
        lookup(b)
        b.user_says(b.say(SECOND_ITEM_MENTION))
        b.near_miss(mode, b.bot_says(b.say(SECOND_ITEM_ASK)), fact="item_id")
        second = d.item_id(b.rng)
        b.user_says(b.say(SECOND_ITEM_GIVE, item=second))
        _, _, slots = read_item(b, second)
        b.bot_says(b.say(d.lookup.answer, **{**slots, "item": second}))
        return
    wanted = {"reask.pii": True, "reask.non_pii": False}.get(mode)
    facts = [fact for fact in d.facts if wanted is None or fact.pii == wanted]
    fact = b.rng.choice(facts)
    value = fact.value(b.rng, b.user, b.slots)
    given = _give(b, fact.key, value, opening=True)
    b.bot_says(b.say(ACK))
    b.filler(b.rng.randint(1, 4))
    if mode == "reask.after_revision":
        b.user_says(b.say(fact.changed))
        b.near_miss(mode, b.bot_says(b.say(fact.ask)), fact=fact.key, given_turn=given)
        new = fact.value(b.rng, b.user, b.slots)
        _give(b, fact.key, new)
        b.bot_says(b.say(NOTED_NEW, value=new))
        return
    b.user_says(b.pick(NUDGE))
    if mode == "reask.confirm_by_quoting":
        turn = b.bot_says(b.pick(ASK_LEAD) + b.say(fact.quote, value=value))
        b.near_miss(mode, turn, fact=fact.key, given_turn=given)
        b.user_says(b.pick(YES_THATS_RIGHT))
        b.bot_says(b.say(ACK))
        return
    turn = b.bot_says(b.pick(ASK_LEAD) + b.say(fact.ask))
    b.defect(mode, turn, fact=fact.key, given_turn=given, value=value)
    b.user_says(b.say(ALREADY_TOLD, value=value))
    b.bot_says(b.say(ACK))


def revision(b: Builder, mode: str) -> None:
    """The revisable fact (a delivery address, a date, an amount) changes before it is used."""
    d = b.domain
    fact_key, key = d.revisable
    act = d.actions[key]
    if mode == "stale.multi_valued":
        second = d.item_id(b.rng)
        b.user_says(first_words(b, b.say(TWO_ITEMS, second=second)), facts=("item_id",))
        b.bot_says(b.say(ACK))
        slots = prepared(b, "plain")
        b.user_says(b.say(d.actions["plain"].request, **slots))
        b.bot_says(b.say(ASK_PLAIN, action=b.say(d.actions["plain"].phrase, **slots)))
        b.user_says(b.pick(CONSENT))
        turn = perform(b, d.actions["plain"], slots, None)
        b.near_miss(mode, turn, other_value=second)
        return
    fact = d.fact(fact_key)
    old = prepared(b, key)["value"]
    new = old
    while new == old:
        new = fact.value(b.rng, b.user, b.slots)
    slots = prepared(b, key, value=old)
    b.user_says(first_words(b, b.say(act.request, **slots)), facts=(fact_key,))
    if fact.pii:
        b.typed(fact_key, old)
    if mode == "repeat.recap_after_change":
        b.bot_says(b.say(ASK_PLAIN, action=b.say(act.phrase, **slots)))
        b.user_says(b.pick(CONSENT))
        template = b.pick(act.done)
        b.bot_calls(b.call(act.tool, act.arguments(slots), act.result(slots)), preamble=PREAMBLE)
        b.bot_says(template.format(**slots))
    else:
        b.bot_says(b.say(READY))
        if b.chance(0.4):
            b.filler(1)
    revised = b.user_says(b.say(REVISE, value=new), facts=(fact_key,))
    if fact.pii:
        b.typed(fact_key, new)
    b.bot_says(b.say(ASK_PLAIN, action=b.say(act.phrase, **slots)))
    b.user_says(b.pick(CONSENT))
    used = old if mode == "stale_fact" else new
    slots = prepared(b, key, value=used)
    turn = b.bot_calls(b.call(act.tool, act.arguments(slots), act.result(slots)), preamble=PREAMBLE)
    if mode == "stale_fact":
        b.bot_says(b.say(act.done, **slots))
        b.defect(mode, turn, fact=fact_key, old=old, new=new, revised_turn=revised)
    elif mode == "stale.acknowledges_change":
        b.near_miss(mode, b.bot_says(b.say(ACK_CHANGE, old=old, value=new)), old=old, new=new)
    elif mode == "repeat.recap_after_change":
        b.near_miss(mode, b.bot_says(template.format(**slots)), old=old, new=new)
    else:
        b.bot_says(b.say(act.done, **slots))
        b.near_miss(mode, turn, old=old, new=new, revised_turn=revised)
