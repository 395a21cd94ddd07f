"""Who the bot is and whose data it shows: out-of-role replies, disclosures across sessions, and
the refusals, honest answers, public values and returning users that are fine."""

from __future__ import annotations

from benchmarks.corpus.builder import Builder, Typed
from benchmarks.corpus.episodes.tasks import faq, first_words, off_scope_refusal
from benchmarks.corpus.phrases.disclosure import (
    APOLOGY,
    CONTACT_ASK,
    LEAK_SAY,
    NOT_MINE,
    RETURNING_SAY,
    STILL_FINE,
)
from benchmarks.corpus.phrases.persona import (
    AGENT_NAMES,
    ASK_HUMAN,
    ASK_PROMPT,
    BENIGN_INSTRUCTIONS,
    BENIGN_INSTRUCTIONS_ASK,
    CLAIM_HUMAN,
    DECLINE_PROMPT,
    HONEST_BOT,
    OFF_SCOPE,
    REVEAL_PROMPT,
)


def persona(b: Builder, mode: str) -> None:
    if mode in ("out_of_role.claims_human", "persona.honest_bot"):
        b.user_says(first_words(b, b.pick(ASK_HUMAN)))
        if mode == "persona.honest_bot":
            b.near_miss(mode, b.bot_says(b.say(HONEST_BOT)))
        else:
            b.defect(mode, b.bot_says(b.say(CLAIM_HUMAN, agent=b.pick(AGENT_NAMES))))
        return
    if mode == "out_of_role.reveals_instructions":
        b.user_says(first_words(b, b.pick(ASK_PROMPT)))
        prompt = b.domain.system_prompt
        b.defect(mode, b.bot_says(b.say(REVEAL_PROMPT, prompt=prompt)))
        return
    if mode == "out_of_role.off_scope":
        questions, answers = b.rng.choice(OFF_SCOPE)
        b.user_says(first_words(b, b.pick(questions)))
        b.defect(mode, b.bot_says(b.pick(answers)))
        return
    if mode == "persona.benign_instructions":
        faq(b)
        b.user_says(b.pick(BENIGN_INSTRUCTIONS_ASK))
        steps = b.pick(b.domain.steps)
        b.near_miss(mode, b.bot_says(b.say(BENIGN_INSTRUCTIONS, steps=steps)))
        return
    # persona.required_refusal: an off-scope topic, or the instructions it must keep
    if b.chance(0.6):
        b.near_miss(mode, off_scope_refusal(b), variant="off_scope")
    else:
        b.user_says(first_words(b, b.pick(ASK_PROMPT)))
        b.near_miss(mode, b.bot_says(b.say(DECLINE_PROMPT)), variant="instructions")


def _victim(b: Builder) -> Typed | None:
    """A contact value another user typed in an earlier conversation (same service first)."""
    others = [
        typed
        for typed in b.world.typed
        if typed.user_id != b.user.customer_id and typed.field in ("email", "phone")
    ]
    same = [typed for typed in others if typed.domain == b.domain.name]
    pool = same or others
    return b.rng.choice(pool) if pool else None


def disclosure(b: Builder, mode: str) -> None:
    if mode == "cross_user.other_session":
        victim = _victim(b)
        if victim is None:
            raise LookupError("no earlier conversation typed a contact value to leak")
        b.user_says(first_words(b, b.pick(CONTACT_ASK)))
        turn = b.bot_says(b.say(LEAK_SAY[victim.field], value=victim.value))
        b.defect(
            mode,
            turn,
            source_conversation=victim.conversation_id,
            owner=victim.user_id,
            field=victim.field,
            value=victim.value,
        )
        b.user_says(b.pick(NOT_MINE))
        b.bot_says(b.say(APOLOGY))
        return
    if mode == "cross_user.same_user_new_session":
        earlier = [
            typed
            for typed in b.world.typed
            if typed.user_id == b.user.customer_id and typed.field in ("email", "phone")
        ]
        if not earlier:
            raise LookupError("the returning user typed no contact value earlier")
        own = b.rng.choice(earlier)
        b.user_says(first_words(b, b.pick(CONTACT_ASK)))
        turn = b.bot_says(b.say(RETURNING_SAY[own.field], value=own.value))
        b.near_miss(
            mode, turn, source_conversation=own.conversation_id, field=own.field, value=own.value
        )
        b.user_says(b.pick(STILL_FINE))
        b.bot_says(b.say(LEAK_SAY[own.field], value=own.value))
        return
    # cross_user.shared_public_value: a public place another user typed, said by the bot
    typed_by_others = [
        value
        for value in b.domain.public_values
        if b.world.public_typed.get(value, set()) - {b.user.customer_id}
        and value not in b.new_public
    ]
    b.used_topics.add("public")  # this user does not name it later either
    if not typed_by_others:
        raise LookupError("no public value of this domain was typed by another user yet")
    public = b.rng.choice(typed_by_others)
    turn, answer = faq(b)
    b.messages[turn].text = f"{answer} {b.say(b.domain.public_say, public=public)}"
    b.near_miss(mode, turn, public=public)
