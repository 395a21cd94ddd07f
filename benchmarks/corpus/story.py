"""One conversation from its plan: an opening, the planted episodes mixed with plain tasks and
small talk in a random order, and a closing. Lengths stay within 4-40 turns."""

from __future__ import annotations

import random
import uuid

from benchmarks.corpus.builder import Builder, World
from benchmarks.corpus.domain import Domain
from benchmarks.corpus.episodes import FILLER, PLAIN, PLANTERS
from benchmarks.corpus.episodes.tasks import closing, opening
from benchmarks.corpus.kinds import DEFECTS
from benchmarks.corpus.model import Conversation
from benchmarks.corpus.pii import Person, make_person
from benchmarks.corpus.plan import Plan
from benchmarks.corpus.pools import Split

MIN_TURNS, MAX_TURNS = 4, 40
OUTCOME_WEIGHTS = {"resolved": 0.5, "answered": 0.25, "handed_off": 0.15, "refused": 0.1}
# Ends the conversation's own work: planted last, and the closing does not hand over again.
TERMINAL = "recovery.escalated"


def _returning_user(rng: random.Random, world: World, domain: Domain) -> Person:
    typed = {
        typed.user_id
        for typed in world.typed
        if typed.field in ("email", "phone") and typed.domain == domain.name
    }
    if not typed:
        raise LookupError(f"no earlier {domain.name} user typed a contact value")
    return world.users[rng.choice(sorted(typed))][1]


def _attempt(
    rng: random.Random, plan: Plan, split: Split, domain: Domain, world: World
) -> tuple[Conversation, Builder]:
    user = (
        _returning_user(rng, world, domain)
        if plan.returning
        else make_person(rng, split, world.taken)
    )
    shape = rng.choice(["agent", "chat"])
    conversation_id = str(uuid.UUID(int=rng.getrandbits(128), version=4))
    b = Builder(rng, split, domain, user, shape, conversation_id, world)
    b.slots["item"] = domain.item_id(rng)
    b.slots.update(domain.extra_slots(rng))

    def filler(count: int) -> None:
        for _ in range(count):
            FILLER(b)

    b.filler = filler
    planted = [kind for kind in plan.kinds if kind != TERMINAL]
    steps: list[tuple[str, str | None]] = [(kind, kind) for kind in planted]
    steps += [("plain", None)] * rng.choice([0, 0, 1, 1, 2])
    steps += [("filler", None)] * rng.choice([0, 0, 1, 1, 2, 3, 4, 6, 8])
    if not steps:
        steps = [("filler", None)]
    rng.shuffle(steps)
    if TERMINAL in plan.kinds:
        steps.append((TERMINAL, TERMINAL))
    if not plan.returning:
        opening(b)
    for step, mode in steps:
        if step == "filler":
            filler(1)
        elif step == "plain":
            rng.choice(PLAIN)(b, None)
        else:
            PLANTERS[step](b, mode)
    if TERMINAL in plan.kinds:
        outcome = "handed_off"
        closing(b, "answered")
    else:
        outcome = rng.choices(list(OUTCOME_WEIGHTS), list(OUTCOME_WEIGHTS.values()))[0]
        closing(b, outcome)
    if any(DEFECTS[label.kind].breaks == "task_completed" for label in b.defects):
        outcome = "not_completed"
    return Conversation(
        conversation_id=conversation_id,
        split=split,
        domain=domain.name,
        service=domain.service,
        shape=shape,
        user=user,
        system_prompt=domain.system_prompt,
        scenario=f"{domain.name}: " + (", ".join(plan.kinds) or "clean"),
        messages=b.messages,
        defects=b.defects,
        near_misses=b.near_misses,
        outcome=outcome,
        initial_state={"customer_id": user.customer_id, "item": b.slots["item"]},
    ), b


def write(seed: int, split: Split, plan: Plan, domain: Domain, world: World) -> Conversation:
    """The plan's conversation; a too long draft is redrawn with the next attempt's seed."""
    for attempt in range(40):
        rng = random.Random(f"{seed}/{split}/{plan.index}/{attempt}")
        conversation, builder = _attempt(rng, plan, split, domain, world)
        if MIN_TURNS <= len(conversation.messages) <= MAX_TURNS:
            world.commit(builder)
            return conversation
    raise RuntimeError(f"plan {plan.index} never fitted in {MIN_TURNS}-{MAX_TURNS} turns")
