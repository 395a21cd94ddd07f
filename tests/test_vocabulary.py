"""The shared vocabulary: entity type names and the pseudonym token format, each defined once."""

from __future__ import annotations

import pytest
from pydantic import ValidationError
from turnwatch.collector.deid.config import DeidConfig
from turnwatch.collector.deid.pseudonym import Pseudonymizer
from turnwatch.scorers.config import ScorerConfig
from turnwatch.scorers.contract import Contract
from turnwatch.scorers.phrases import tokens

from turnwatch.tokens import TOKEN, format_token, value_part

CONTRACT = {"service": "bot", "version": "1", "chatbot_role": "helper"}


def test_a_pseudonym_is_parsed_back_into_its_type_and_value_part():
    pseudonymizer = Pseudonymizer(b"k" * 32, ["US"])
    made = pseudonymizer.token("EMAIL_ADDRESS", "Jane.Doe@example.com")
    match = TOKEN.fullmatch(made)
    assert match is not None
    assert match.group(1) == "EMAIL_ADDRESS"
    assert match.group(2) == value_part(made)
    # The value alone is hashed: the same value as another type shares the value part.
    assert value_part(pseudonymizer.token("PERSON", "jane.doe@example.com")) == value_part(made)


def test_format_token_keeps_eight_hex_characters():
    assert format_token("ORDER_NUMBER", "0123456789abcdef") == "<ORDER_NUMBER_01234567>"


@pytest.mark.parametrize(
    "text",
    [
        "<email_address_3f9a1c2b>",
        "<EMAIL_3F9A1C2B>",
        "<EMAIL_3f9a1c2>",
        "<E_3f9a1c2b>",
        "<3f9a1c2b>",
    ],
)
def test_what_is_not_a_token(text):
    assert TOKEN.search(text) is None


def test_tokens_in_text_with_types():
    text = "order <ORDER_NUMBER_12345678> for <PERSON_deadbeef>, not <person_deadbeef>"
    assert tokens(text) == [
        ("<ORDER_NUMBER_12345678>", "ORDER_NUMBER"),
        ("<PERSON_deadbeef>", "PERSON"),
    ]


@pytest.mark.parametrize(
    ("build", "location"),
    [
        (lambda: DeidConfig(entities=["PERSON", "email"]), "entities.1"),
        (lambda: DeidConfig(patterns=[{"entity": "Order", "regex": "o"}]), "patterns.0.entity"),
        (lambda: DeidConfig(field_entities={"name": "PERSON NAME"}), "field_entities.name"),
        (lambda: ScorerConfig(disclosure_entities=["A"]), "disclosure_entities.0"),
        (
            lambda: Contract(**CONTRACT, required_facts=[{"id": "f", "entities": ["ORDER-ID"]}]),
            "required_facts.0.entities.0",
        ),
        (lambda: Contract(**CONTRACT, fact_questions={"order": "which order"}), "fact_questions"),
        (lambda: DeidConfig(entities=["X" * 41]), "entities.0"),
    ],
)
def test_every_configured_entity_type_is_checked_the_same_way(build, location):
    with pytest.raises(ValidationError) as caught:
        build()
    [error] = caught.value.errors()
    assert ".".join(str(part) for part in error["loc"]).startswith(location)
    assert "entity types are upper-case identifiers" in error["msg"]


def test_valid_entity_types_are_kept():
    assert DeidConfig(entities=["PERSON", "PERSON", "US_SSN"]).entities == ["PERSON", "US_SSN"]
    assert DeidConfig(field_entities={"Email": "EMAIL_ADDRESS"}).field_entities == {
        "email": "EMAIL_ADDRESS"
    }
    assert ScorerConfig(disclosure_entities=["X" * 40]).disclosure_entities == ["X" * 40]
