"""What a JSON value in tool arguments or results is, from its key.

Three kinds of key, checked in order: a key named in `deid.field_entities` (`email`, `iban`,
`city`) makes its value that entity; a key with a name word (`passenger`, `cardHolder`,
`beneficiary_name`) makes a name-shaped value a PERSON; a key with an identifier word
(`order_id`, `bookingRef`, `account_number`) makes its value an identifier. A key with a word
from `not_personal_key_words` (`product_id`, `tool_call_id`) is none of these. Every value is
also analysed as text, so a name under an unknown key is still found by the recognizers.
"""

from __future__ import annotations

import regex
from turnwatch.collector.deid.config import (
    IDENTIFIER_FALLBACK,
    IDENTIFIER_FIELD_ENTITIES,
    DeidConfig,
)
from turnwatch.collector.deid.recognizers.base import words
from turnwatch.collector.deid.recognizers.names import NAME_SHAPE

KEY_WORD = regex.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
MAX_NAME_WORDS = 5
# An identifier is one token with a digit in it, or a short upper-case code ("X7K9PQ").
IDENTIFIER_SHAPE = regex.compile(r"(?=\S*\d)\S{1,64}|[A-Z0-9][A-Z0-9-]{3,23}")
# Beside these keys a `name` is a product's or a plan's, not a person's.
THING_SIBLINGS = frozenset(
    words(
        """
        price sku quantity qty amount currency stock product_id item_id unit_price plan
        sku_id category brand model version
        """
    )
)


def key_words(key: str) -> list[str]:
    """`bookingRef` -> [booking, ref]; `ACCOUNT_NUMBER` -> [account, number]."""
    return [word.casefold() for word in KEY_WORD.findall(key)]


class FieldRules:
    def __init__(self, config: DeidConfig) -> None:
        fields = config.tool_fields
        self.field_entities = config.field_entities
        self.name_words = frozenset(fields.name_key_words)
        self.identifier_words = frozenset(fields.identifier_key_words)
        self.not_personal = frozenset(fields.not_personal_key_words)

    def entity(self, key: str, value: str, siblings: frozenset[str]) -> str | None:
        """The entity `value` is as a whole, or None to analyse it as text only."""
        if not value.strip():
            return None
        folded = key.casefold()
        if folded in self.field_entities:
            return self.field_entities[folded]
        words = key_words(key)
        if self.not_personal.intersection(words) or folded in self.not_personal:
            return None
        if self.name_words.intersection(words) and self._name_shaped(value, siblings):
            return "PERSON"
        if self.identifier_words.intersection(words) and IDENTIFIER_SHAPE.fullmatch(value.strip()):
            return identifier_entity(words)
        return None

    def names_a_thing(self, key: str, siblings: frozenset[str]) -> bool:
        """A `name` beside `price` or `sku`, or any value under a not-personal key (`sku`,
        `product_id`): a thing's, whatever the NER model thinks it is."""
        words = key_words(key)
        if self.not_personal.intersection(words) or key.casefold() in self.not_personal:
            return True
        return bool(self.name_words.intersection(words)) and _beside_things(siblings)

    @staticmethod
    def _name_shaped(value: str, siblings: frozenset[str]) -> bool:
        value = value.replace(",", " ").strip()
        if len(value.split()) > MAX_NAME_WORDS or not NAME_SHAPE.fullmatch(" ".join(value.split())):
            return False
        return not _beside_things(siblings)


def _beside_things(siblings: frozenset[str]) -> bool:
    return bool(THING_SIBLINGS.intersection(key.casefold() for key in siblings))


def identifier_entity(words: list[str]) -> str:
    for entity, cues in IDENTIFIER_FIELD_ENTITIES.items():
        if any(word in cues for word in words):
            return entity
    return IDENTIFIER_FALLBACK
