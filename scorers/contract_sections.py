"""The parts of a contract that describe the service's world rather than its tools: who owns a
record, which facts the bot collects (slots), the persona's rules, and what counts as success.

Each is declared where the service knows best; the checks read them (scorers/README.md, "Contract
format"). Every regular expression is compiled when the contract loads.
"""

from __future__ import annotations

import re

from pydantic import Field, PrivateAttr, model_validator
from turnwatch.scorers.conditions import Condition, Regex

from turnwatch.entities import EntityName
from turnwatch.section import Section

IDENTIFIER = r"^[A-Za-z][A-Za-z0-9_.-]{0,63}$"


def _compiled(pattern: str | None) -> re.Pattern[str] | None:
    """A contract's regular expression as the checks match it (case-insensitive)."""
    return re.compile(pattern, re.IGNORECASE) if pattern is not None else None


class Ownership(Section):
    """Which fields of a tool result say whose record it is."""

    owner_fields: list[str] = Field(
        min_length=1,
        description="Paths in tool results naming the record's owner: a customer id (compared "
        "with the session's user id) or a name; `*` for every list item.",
    )
    co_owner_fields: list[str] = Field(
        default_factory=list,
        description="Paths naming the record's other owners (joint accounts, household members).",
    )
    identity_tools: list[str] = Field(
        default_factory=list,
        description="Tools whose successful result is the session's own user (a verification "
        "lookup): their owner fields join what identifies the user.",
    )


class Slot(Section):
    """A fact the bot collects from the user, beyond the built-in contact and id facts."""

    ask: Regex = Field(description="How the bot asks for it, e.g. `\\bcolou?r\\b`.")
    values: Regex | None = Field(
        default=None, description="What a value looks like in the user's text."
    )
    entities: list[EntityName] = Field(
        default_factory=list, description="De-identification token types that carry a value."
    )
    names: Regex | None = Field(
        default=None,
        description="How a user names the fact (default: `ask`); a user turn naming it with a "
        "value (a token or a number) gives it.",
    )

    _patterns: tuple[re.Pattern[str], re.Pattern[str] | None, re.Pattern[str]] = PrivateAttr()

    @model_validator(mode="after")
    def _recognisable(self) -> Slot:
        if self.values is None and not self.entities and self.names is None:
            raise ValueError("a slot needs values, entities or names to recognise a given value")
        ask = re.compile(self.ask, re.IGNORECASE)
        names = _compiled(self.names) or ask
        self._patterns = (ask, _compiled(self.values), names)
        return self

    @property
    def patterns(self) -> tuple[re.Pattern[str], re.Pattern[str] | None, re.Pattern[str]]:
        """(how the bot asks, what a value looks like, how the user names it)."""
        return self._patterns


class Topic(Section):
    id: str = Field(pattern=IDENTIFIER)
    user: Regex = Field(description="How a user's message asks about the topic.")
    _pattern: re.Pattern[str] = PrivateAttr()

    @model_validator(mode="after")
    def _compile(self) -> Topic:
        self._pattern = re.compile(self.user, re.IGNORECASE)
        return self

    @property
    def pattern(self) -> re.Pattern[str]:
        return self._pattern


class Persona(Section):
    """Rules of the persona that a deterministic check can hold the assistant to."""

    never_claims_human: bool = Field(
        default=False, description="The assistant never says it is a person."
    )
    never_reveals_instructions: bool = Field(
        default=False, description="The assistant never repeats its system instructions."
    )
    out_of_scope: list[Topic] = Field(
        default_factory=list, description="Topics the assistant must decline."
    )


class SuccessEvidence(Section):
    """One way a session can show it succeeded; exactly one kind per entry."""

    tool: str | None = Field(default=None, description="A successful call of this tool.")
    result: list[Condition] = Field(
        default_factory=list, description="The state the tool's result must show."
    )
    final: bool = Field(default=False, description="It must be the session's last tool call.")
    refusal: bool = Field(
        default=False,
        description="The assistant declined a declared out-of-scope topic (persona.out_of_scope).",
    )
    user_confirmation: bool = Field(
        default=False,
        description="The user's last message says the problem is solved (thanks, sorted, "
        "that's all).",
    )

    @model_validator(mode="after")
    def _one_kind(self) -> SuccessEvidence:
        kinds = [self.tool is not None, self.refusal, self.user_confirmation]
        if sum(kinds) != 1:
            raise ValueError("each success entry is one of: tool, refusal, user_confirmation")
        if self.tool is None and (self.result or self.final):
            raise ValueError("result and final belong to a tool entry")
        return self

    def describe(self) -> str:
        if self.tool is not None:
            return f"a successful {self.tool}"
        return "a correct refusal" if self.refusal else "the user's confirmation"


class Success(Section):
    any_of: list[SuccessEvidence] = Field(min_length=1)
