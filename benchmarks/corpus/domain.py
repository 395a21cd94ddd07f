"""What a support domain supplies to the generic episodes: tools, phrasings, facts, a contract.

Each domain module (`domains/*.py`) builds one `Domain`. The episodes (`episodes/*.py`) know how
a defect or near miss is shaped; the domain knows how its customers and its bot talk and what
its tools return. `Slots` are the values a phrasing is filled with.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from benchmarks.corpus.pii import Person
from benchmarks.corpus.pools import Pool

Slots = dict[str, Any]
Record = dict[str, Any]


@dataclass(frozen=True)
class ReadTool:
    """The lookup of the customer's main item (order, bill, account, booking, subscription)."""

    tool: str
    argument: str
    record: Callable[[random.Random, str, list[Person]], tuple[Record, Slots]]
    """(rng, item id, owners) -> (tool result, slots for the answer); owners[0] is the holder."""
    ask: Pool
    answer: Pool
    own_readback: Pool
    """The bot reads the user's own contact details back from the record ({holder_*})."""
    foreign: Pool
    """The bot reads out the details of the record's holder, another customer ({holder_*})."""
    joint: Pool
    """The bot names the other holder of a record the user co-owns ({coowner_name})."""
    not_found: Record


@dataclass(frozen=True)
class Action:
    """A side effect. `form` is how the contract wants it approved."""

    tool: str
    form: Literal["confirm", "tool"]
    prepare: Callable[[random.Random, Slots], Slots]
    """Values this call needs (amounts, new values), given the conversation's slots."""
    arguments: Callable[[Slots], Record]
    result: Callable[[Slots], Record]
    request: Pool
    phrase: Pool
    """The bot's words for the action inside a question: "change the address of {item} ..."."""
    done: Pool
    user_phrase: Pool | None = None
    """The user's own words for it, used when consenting ("cancel my subscription")."""


@dataclass(frozen=True)
class ApprovalTool:
    tool: str
    arguments: Callable[[Slots], Record]
    approved: Record
    denied: Record
    granted: Pool
    """The bot says approval came through before it acts."""


@dataclass(frozen=True)
class Forbidden:
    limit_tool: str
    limit_argument: str
    limit: float
    tool: str
    tool_arguments: Callable[[Slots], Record]
    tool_result: Record
    request: Pool
    done: Pool
    decline: Pool
    sibling: str
    sibling_prepare: Callable[[random.Random, Slots], Slots]
    sibling_arguments: Callable[[Slots], Record]
    sibling_result: Record
    sibling_request: Pool
    sibling_done: Pool


@dataclass(frozen=True)
class Diagnostic:
    tool: str
    arguments: Callable[[Slots], Record]
    result: Callable[[random.Random, Slots], tuple[Record, Slots]]
    request: Pool
    answer: Pool
    fabricated: Pool
    """States a result the tool never returned, in words that sound like a finding."""
    alternative: str
    alternative_arguments: Callable[[Slots], Record]
    alternative_result: Callable[[random.Random, Slots], tuple[Record, Slots]]
    alternative_answer: Pool
    error: str = "TimeoutError"


@dataclass(frozen=True)
class Fact:
    """Something the user tells the bot that it should keep."""

    key: str
    pii: bool
    value: Callable[[random.Random, Person, Slots], str]
    give: Pool
    ask: Pool
    quote: Pool
    """The bot checks the known value by quoting it (not a re-ask)."""
    changed: Pool
    """The user says the value changed without giving the new one."""


@dataclass(frozen=True)
class Faq:
    topic: str
    questions: Pool
    answers: Pool


@dataclass(frozen=True)
class Domain:
    name: str
    service: str
    company: str
    scope: str
    chatbot_role: str
    system_prompt: str
    item_noun: str
    item_ref: str
    """What the item's id is called: "order number", "booking reference"."""
    item_id: Callable[[random.Random], str]
    verify_tool: str
    verify_argument: Literal["email", "phone"]
    lookup: ReadTool
    actions: dict[str, Action]
    """By role: `plain`, `negative` (a verb like cancel), `amount` and `revisable` (confirmed by
    the user), `approved` (needs the approval tool; the forbidden limit applies to it)."""
    approval: ApprovalTool
    forbidden: Forbidden
    diagnostic: Diagnostic
    facts: list[Fact]
    revisable: tuple[str, str]
    """(fact key, action key): the action that takes this fact's value as an argument."""
    faqs: list[Faq]
    public_values: tuple[str, ...]
    public_ask: Pool
    """The user mentions a public value ({public}): a store, a product, a branch."""
    public_say: Pool
    public_answer: Pool
    resolution_tool: str
    handoff_tool: str
    openers: Pool
    steps: Pool
    """Self-service instructions the bot may give ("instructions" that are not its own)."""
    currency: str = "$"
    extra_slots: Callable[[random.Random], Slots] = lambda rng: {}
    """Conversation-wide values a domain's phrasings need (the user's card's last digits)."""
    contract: dict[str, Any] = field(default_factory=dict)

    def fact(self, key: str) -> Fact:
        return next(fact for fact in self.facts if fact.key == key)
