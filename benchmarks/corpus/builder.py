"""Writing one conversation: messages in session-turn order, labels planted as they are written.

A label's turn index is the index of the message the builder has just appended, so no index is
ever typed by hand. The builder also keeps the corpus-wide `World`: what users typed in earlier
conversations (for disclosures across sessions and for shared public values).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from benchmarks.corpus.domain import Domain, Faq, Slots
from benchmarks.corpus.kinds import DEFECTS, NEAR_MISSES
from benchmarks.corpus.model import Label, Message, Shape, ToolCall
from benchmarks.corpus.pii import Person, make_person
from benchmarks.corpus.pools import Picker, Pool, Split


@dataclass(frozen=True)
class Typed:
    """A personal value a user typed in a conversation."""

    conversation_id: str
    user_id: str
    domain: str
    field: str
    value: str


@dataclass
class World:
    split: Split
    taken: set[str] = field(default_factory=set)
    typed: list[Typed] = field(default_factory=list)
    public_typed: dict[str, set[str]] = field(default_factory=dict)
    """Public value -> user ids who typed it."""
    users: dict[str, tuple[str, Person]] = field(default_factory=dict)
    """Customer id -> (domain, person) of every conversation's user so far."""

    def stranger(self, rng: random.Random) -> Person:
        """Another customer of the same business, who has no conversation in the corpus."""
        return make_person(rng, self.split, self.taken)

    def commit(self, builder: Builder) -> None:
        """Keep what a finished conversation's user typed (a discarded attempt keeps nothing)."""
        self.typed.extend(builder.new_typed)
        for value in builder.new_public:
            self.public_typed.setdefault(value, set()).add(builder.user.customer_id)
        self.users[builder.user.customer_id] = (builder.domain.name, builder.user)


class Builder:
    def __init__(
        self,
        rng: random.Random,
        split: Split,
        domain: Domain,
        user: Person,
        shape: Shape,
        conversation_id: str,
        world: World,
    ) -> None:
        self.rng = rng
        self.split = split
        self.domain = domain
        self.user = user
        self.shape = shape
        self.conversation_id = conversation_id
        self.world = world
        self.picker = Picker(rng, split)
        self.messages: list[Message] = []
        self.defects: list[Label] = []
        self.near_misses: list[Label] = []
        self.slots: Slots = {
            "company": domain.company,
            "scope": domain.scope,
            "first": user.first,
            "item_noun": domain.item_noun,
            "item_ref": domain.item_ref,
            "split": split,
            "user": user,
        }
        self.new_typed: list[Typed] = []
        self.new_public: list[str] = []
        self.filler: Callable[[int], None] = lambda count: None
        """Adds `count` unrelated exchanges (set by the story: episodes use it for distance)."""
        self.used_topics: set[str] = set()
        self.records: dict[tuple[str, tuple[str, ...]], tuple[dict[str, Any], Slots]] = {}
        self.looked_up: set[str] = set()
        self._calls = 0

    # -- phrasing -------------------------------------------------------------------------

    def say(self, pool: Pool, **slots: Any) -> str:
        return self.picker.fill(pool, **{**self.slots, **slots})

    def pick(self, pool: Pool) -> str:
        return self.picker.pick(pool)

    def chance(self, probability: float) -> bool:
        return self.rng.random() < probability

    def fresh_topic(self) -> Faq | None:
        """A question topic this conversation has not touched yet (None when all are used)."""
        fresh = [topic for topic in self.domain.faqs if topic.topic not in self.used_topics]
        if not fresh:
            return None
        topic = self.rng.choice(fresh)
        self.used_topics.add(topic.topic)
        return topic

    def topic(self) -> Faq:
        return self.fresh_topic() or self.rng.choice(self.domain.faqs)

    def record(self, item: str, owners: list[Person]) -> tuple[dict[str, Any], Slots]:
        """The lookup result for an item: the same record every time it is read."""
        key = (item, tuple(owner.customer_id for owner in owners))
        if key not in self.records:
            self.records[key] = self.domain.lookup.record(self.rng, item, owners)
        return self.records[key]

    # -- messages -------------------------------------------------------------------------

    @property
    def last_index(self) -> int:
        return len(self.messages) - 1

    @property
    def expects_user(self) -> bool:
        return not self.messages or self.messages[-1].role == "assistant"

    def user_says(self, text: str, facts: tuple[str, ...] = ()) -> int:
        if not self.expects_user:
            raise AssertionError("two user messages in a row: every user turn gets an answer")
        self.messages.append(Message("user", text, facts=list(facts)))
        return self.last_index

    def bot_says(self, text: str) -> int:
        self._after_user()
        self.messages.append(Message("assistant", text))
        return self.last_index

    def bot_calls(self, *calls: ToolCall, preamble: Pool | None = None) -> int:
        """One model output carrying tool calls. In the chat shape it often carries a short
        preamble too (text plus tool calls in one message); agent frameworks emit calls alone."""
        self._after_user()
        text = None
        if preamble is not None and self.shape == "chat" and self.chance(0.7):
            text = self.say(preamble)
        self.messages.append(Message("assistant", text, calls=list(calls)))
        return self.last_index

    def call(
        self, tool: str, arguments: dict[str, Any], result: Any = None, error: str | None = None
    ) -> ToolCall:
        self._calls += 1
        if self.shape == "agent":
            call_id = f"toolu_{self.rng.getrandbits(64):016x}"
        else:
            call_id = f"call_{self._calls}_{self.rng.getrandbits(40):010x}"
        return ToolCall(call_id, tool, arguments, result, error)

    def _after_user(self) -> None:
        if not self.messages:
            raise AssertionError("a conversation starts with the user")

    # -- labels ---------------------------------------------------------------------------

    def defect(self, kind: str, turn: int, **detail: Any) -> None:
        spec = DEFECTS[kind]
        if self.messages[turn].role != spec.role:
            raise AssertionError(f"{kind} planted on a {self.messages[turn].role} turn")
        self.defects.append(Label(kind, spec.check, turn, detail))

    def near_miss(self, kind: str, turn: int, **detail: Any) -> None:
        self.near_misses.append(Label(kind, NEAR_MISSES[kind], turn, detail))

    # -- corpus-wide memory ---------------------------------------------------------------

    def typed(self, field_name: str, value: str) -> None:
        """Remember a personal value this conversation's user typed."""
        self.new_typed.append(
            Typed(self.conversation_id, self.user.customer_id, self.domain.name, field_name, value)
        )

    def typed_public(self, value: str) -> None:
        self.new_public.append(value)
