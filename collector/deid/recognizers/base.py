"""What every turnwatch recognizer shares: Presidio's recognizer interface, results, context.

A recognizer is a small class with one job (cards, phones, introduced names, ...) that Presidio's
`AnalyzerEngine` runs like its own; `deid.recognizers` lists which ones run. Each scores its own
context words instead of relying on Presidio's lemma-based context enhancer, because the NER-only
spaCy pipeline has no lemmatizer.
"""

from __future__ import annotations

import regex
from presidio_analyzer import EntityRecognizer, RecognizerResult

LANGUAGE = "en"

WORD_SEPARATORS = r"[\s,;:()\[\]{}\"'“”‘’<>|/]"


class TurnwatchRecognizer(EntityRecognizer):
    """Base of turnwatch's recognizers: no model to load, English, results built one way."""

    ENTITIES: tuple[str, ...] = ()

    def __init__(self, name: str | None = None) -> None:
        super().__init__(
            supported_entities=list(self.ENTITIES),
            supported_language=LANGUAGE,
            name=name or type(self).__name__,
        )

    def load(self) -> None:
        return None

    def analyze(self, text: str, entities: list[str], nlp_artifacts=None) -> list[RecognizerResult]:
        wanted = set(entities) if entities else set(self.ENTITIES)
        return [
            RecognizerResult(entity, start, end, score)
            for entity, start, end, score in self.find(text, nlp_artifacts)
            if entity in wanted and end > start
        ]

    def find(self, text: str, nlp_artifacts) -> list[tuple[str, int, int, float]]:
        """(entity, start, end, score) for every match in `text`."""
        raise NotImplementedError


def words(text: str) -> list[str]:
    """The white-space separated words of a word-list literal."""
    return text.split()


def before(text: str, start: int, chars: int = 48) -> str:
    """The text just before `start`, lower-cased: where context words are looked for."""
    return text[max(0, start - chars) : start].casefold()


# Where a sentence or clause ends: a context word before it says nothing about what follows.
CLAUSE_END = regex.compile(r"[.!?;](?:\s|$)|\n")


def clause_before(text: str, start: int, chars: int) -> str:
    """`before`, from the start of the clause that holds `start` ("SKU 48213. Charge it to
    4111 ...": the card is not the product's)."""
    window = before(text, start, chars)
    ends = list(CLAUSE_END.finditer(window))
    return window[ends[-1].end() :] if ends else window


def context_words(words: list[str]) -> regex.Pattern[str]:
    """A pattern finding any of `words` as whole words (their plural too)."""
    alternatives = "|".join(sorted((regex.escape(word) for word in words), key=len, reverse=True))
    return regex.compile(rf"(?<!\w)(?:{alternatives})s?(?!\w)", regex.IGNORECASE)
