"""Recognizers turnwatch adds to Presidio's predefined set."""

from __future__ import annotations

from presidio_analyzer import EntityRecognizer, Pattern, PatternRecognizer
from turnwatch.collector.deid.config import CustomPattern

# Words after an introduction phrase that end a name instead of being part of it.
_NOT_A_NAME = (
    "and|but|or|so|from|at|in|on|with|here|please|the|to|i|is|was|by|for|and|my|again|speaking"
)

# A name is the one or two words after "my name is" / "call me" / "name:", in any case:
# chat users often type "my name is rose hill", which the NER model does not tag.
INTRODUCED_NAME = (
    r"(?i)(?<=\b(?:my\s+name\s+is|my\s+name's|name\s*:|call\s+me|i\s+am\s+called)\s+)"
    rf"(?!(?:{_NOT_A_NAME})\b)[a-z][a-z'-]+"
    rf"(?:\s+(?!(?:{_NOT_A_NAME})\b)[a-z][a-z'-]+)?"
)


def custom_pattern_recognizer(number: int, spec: CustomPattern) -> PatternRecognizer:
    return PatternRecognizer(
        supported_entity=spec.entity,
        name=f"turnwatch_pattern_{number}_{spec.entity.lower()}",
        patterns=[Pattern(spec.entity.lower(), spec.regex, spec.score)],
        context=spec.context or None,
    )


def introduced_name_recognizer() -> PatternRecognizer:
    return PatternRecognizer(
        supported_entity="PERSON",
        name="turnwatch_introduced_name",
        patterns=[Pattern("introduced_name", INTRODUCED_NAME, 0.6)],
    )


def deny_list_recognizer(words: list[str]) -> EntityRecognizer:
    return PatternRecognizer(
        supported_entity="DENY_LIST", name="turnwatch_deny_list", deny_list=words
    )
