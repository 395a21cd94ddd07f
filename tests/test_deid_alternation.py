"""The whole-word pattern of a session's values matches exactly what the pattern of all of
them matches, with only the values that occur in it."""

from __future__ import annotations

import regex
from turnwatch.collector.deid.alternation import whole_words

from benchmarks.pii.generate import make_corpus

VALUES = [
    "maria garcia", "maria", "garcia", "m. garcia", "m garcia", "maria g.", "al-masri",
    "o'neill", "strauss", "straße", "σοφία", "van der berg", "berg", "absent person", "zoë",
]  # fmt: skip
TEXTS = [
    "Maria  Garcia called; MARIA\nGARCIA again, then M. Garcia and maria g. about it.",
    "Ask Al-Masri or O'Neill (not O’Neill). Herr Strauß and Frau STRAUSS, ΣΟΦΊΑ too.",
    "Jan van der  Berg, Bergen is not Berg. Zoë and ZOË; garcias and mariam are no matches.",
]


def _everything(values: list[str]) -> regex.Pattern[str]:
    alternatives = "|".join(
        regex.escape(value).replace(r"\ ", r"\s+")
        for value in sorted(values, key=len, reverse=True)
    )
    return regex.compile(rf"(?<!\w)(?:{alternatives})(?!\w)", regex.IGNORECASE)


def _matches(pattern: regex.Pattern[str] | None, texts: list[str]) -> list[list[tuple]]:
    if pattern is None:
        return [[] for _ in texts]
    return [[(m.span(), m.group()) for m in pattern.finditer(text)] for text in texts]


def test_same_matches_as_the_pattern_of_every_value():
    pattern = whole_words(VALUES, TEXTS)
    found = _matches(pattern, TEXTS)
    assert found == _matches(_everything(VALUES), TEXTS)
    assert ((0, 13), "Maria  Garcia") in found[0] and ((60, 67), "STRAUSS") in found[1]
    assert "absent" not in pattern.pattern and "m\\ garcia" not in pattern.pattern


def test_same_matches_on_the_pii_corpus_with_its_names():
    corpus = make_corpus(seed=7, texts=200, conversations=0)
    texts = [text.text for text in corpus.texts]
    values = sorted(
        {
            variant
            for text in corpus.texts
            for item in text.occurrences
            if item.entity == "PERSON"
            for variant in (text.text[item.start : item.end].casefold(), "absent name")
        }
    )
    halves = (texts[:100], texts[100:])
    for part in halves:
        assert _matches(whole_words(values, part), part) == _matches(_everything(values), part)
    assert any(_matches(whole_words(values, halves[0]), halves[0]))


def test_no_value_in_the_texts_gives_no_pattern():
    assert whole_words(["maria garcia"], ["nothing to see", "garcia maria"]) is None
    assert whole_words([], TEXTS) is None
