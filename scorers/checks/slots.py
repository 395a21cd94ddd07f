"""Slots: the facts a bot collects from the user, and how their values are recognised.

A slot is recognised by the values it takes, not by what de-identification called them: a value is
a pseudonym token's value part (so an order number tokenised once as ORDER_NUMBER and once as
PERSON is one value), a number (amounts compare as numbers, `$12.50` = `12.5`), or a contract
pattern's match. Built in: the contact and id facts by token type (`FACT_QUESTIONS`, plus the
contract's `fact_questions`), amounts, and dates; the contract adds its own (`slots`).

A user message gives a slot when it holds one of the slot's values, or when it names the slot
(`names`) and holds a token or a number after the name while not being a question ("my booking
reference is <DATE_TIME_...>").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from turnwatch.scorers.contract import Contract
from turnwatch.scorers.phrases import FACT_QUESTIONS, SINGLE_VALUED, asking_sentences, tokens
from turnwatch.scorers.scorer import Context
from turnwatch.scorers.sentences import is_question, numbers

from turnwatch.tokens import TOKEN, value_part

_I = re.IGNORECASE
MONEY = re.compile(
    r"[$£€¥]\s?\d[\d,]*(?:\.\d+)?|\b\d[\d,]*(?:\.\d+)?\s?(?:dollars|pounds|euros|usd|gbp|eur)\b", _I
)
_MONTH = r"(jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?"
DATE = re.compile(
    rf"\b\d{{1,2}}(st|nd|rd|th)?\s+{_MONTH}|\b{_MONTH}\s+\d{{1,2}}(st|nd|rd|th)?\b|"
    r"\b\d{4}-\d{2}-\d{2}\b|\b\d{1,2}/\d{1,2}(/\d{2,4})?\b",
    _I,
)
# Presidio tags greetings' "morning" and "today" as DATE_TIME: those tokens are no date given.
_GREETING_TOKEN = re.compile(
    rf"\bgood\s+{TOKEN.pattern}|\b(how can i help you)\s+{TOKEN.pattern}", _I
)
# Slots whose values are not tokens of one type, with how they are asked for and named.
AMOUNT_ASK = (
    r"\bhow much\b|\bamount\b|\bwhat (was|is|did) (the |it )?(total|price|cost)\b|"
    r"\b(total|price) you\b|\bcost you\b"
)
AMOUNT_NAMES = r"\b(amount|price|paid|pay|cost|charge[ds]?|total|refund|took)\b"
DATE_ASK = r"\b(which|what) (date|day)\b|\bwhen (is|was|do|did|does|will|are|were|would)\b|\bdate\b"
DATE_NAMES = r"\b(dates?|days?|when)\b"
# How a user names the built-in facts (broader than how the bot asks: "another order").
_NAMES = {
    "EMAIL_ADDRESS": r"\be-?mail\b",
    "PHONE_NUMBER": r"\b(phone|mobile|cell|call|text|ring)\b|\b(my|best|the|this|that) number\b",
    "ORDER_NUMBER": r"\border\b",
    "ACCOUNT_ID": r"\baccount\b",
    "STREET_ADDRESS": r"\baddress\b",
    "PERSON": r"\bname\b",
    "CREDIT_CARD": r"\bcard\b",
    "IBAN_CODE": r"\b(iban|account)\b",
}


@dataclass(frozen=True, slots=True)
class SlotSpec:
    name: str
    ask: re.Pattern[str]
    names: re.Pattern[str]
    values: re.Pattern[str] | None = None
    entities: frozenset[str] = frozenset()
    single_valued: bool = False
    numeric: bool = False
    dates: bool = False

    def values_in(self, text: str) -> set[str]:
        """The slot's values in a text, as comparable keys."""
        found = {
            f"h:{value_part(token)}" for token, entity in tokens(text) if entity in self.entities
        }
        if self.dates:
            for greeting in _GREETING_TOKEN.finditer(text):
                found -= {f"h:{value_part(token)}" for token, _ in tokens(greeting.group(0))}
            found |= {_text_key(m.group(0)) for m in DATE.finditer(text)}
        if self.values is not None:
            for match in self.values.finditer(TOKEN.sub(" ", text)):
                amounts = numbers(match.group(0)) if self.numeric else set()
                found |= {f"n:{n:g}" for n in amounts} or {_text_key(match.group(0))}
        return found

    def given_in(self, text: str, by_name: bool = True) -> set[str]:
        """What a user message gives: the slot's values, or (`by_name`) any value in a message
        naming it. A question, or a message announcing a change ("I got a new phone number
        last week"), names a slot without giving it."""
        found = self.values_in(text)
        named = None if found or not by_name or is_question(text) else self.names.search(text)
        if named is None:
            return found
        # The value follows its name ("my account is <...>", "on account <...>"); a token before
        # it describes it ("my <PERSON_...> account": a brand de-identification took for a name).
        return any_values(text[named.end() :])


def _text_key(value: str) -> str:
    """A value written as words, compared without case, spacing or a closing full stop."""
    return "t:" + " ".join(value.casefold().rstrip(".").split())


def any_values(text: str) -> set[str]:
    """Every token and number of a text, as slot value keys (for quoting)."""
    return {f"h:{value_part(token)}" for token, _ in tokens(text)} | {
        f"n:{n:g}" for n in numbers(TOKEN.sub(" ", text))
    }


def slot_specs(ctx: Context) -> list[SlotSpec]:
    return ctx.view("slots.specs", lambda: _specs(ctx))


def _specs(ctx: Context) -> list[SlotSpec]:
    return specs_for(ctx.contract)


def asked_slots(text: str, specs: list[SlotSpec]) -> list[str]:
    """The slots an assistant text asks the user for, in the order it asks; a sentence that
    already holds a value of the slot (confirming it) does not ask for it."""
    return [
        spec.name
        for sentence in asking_sentences(text)
        for spec in specs
        if spec.ask.search(sentence) and not spec.values_in(sentence)
    ]


def token_specs(contract: Contract | None) -> list[SlotSpec]:
    """The slots whose values are de-identification tokens of one type, named by that type
    (what a simulated user holds as private facts)."""
    return [spec for spec in specs_for(contract) if spec.entities == {spec.name}]


def specs_for(contract: Contract | None) -> list[SlotSpec]:
    """The built-in slots (named by token type, plus `amount` and `date`) and the contract's."""
    questions = {**FACT_QUESTIONS, **(contract.fact_questions if contract is not None else {})}
    specs = [
        SlotSpec(
            name=entity,
            ask=re.compile(pattern, _I),
            names=re.compile(_NAMES.get(entity, pattern), _I),
            entities=frozenset({entity}),
            single_valued=entity in SINGLE_VALUED,
        )
        for entity, pattern in questions.items()
    ]
    specs.append(
        SlotSpec(
            "amount", re.compile(AMOUNT_ASK, _I), re.compile(AMOUNT_NAMES, _I), MONEY, numeric=True
        )
    )
    specs.append(
        SlotSpec(
            "date",
            re.compile(DATE_ASK, _I),
            re.compile(DATE_NAMES, _I),
            entities=frozenset({"DATE_TIME"}),
            dates=True,
        )
    )
    if contract is not None:
        for name, slot in contract.slots.items():
            ask, values, names = slot.patterns
            specs.append(SlotSpec(name, ask, names, values, frozenset(slot.entities)))
    return specs
