"""Sentences and phrases in de-identified text, without a language model.

Splitting keeps decimals (`$12.50`), abbreviations (`e.g.`, `Mr.`) and tokens whole; a contract
phrase (`delivery day`, `cancel`) matches the words in order, each word also matching its longer
forms (`cancel` -> `cancelled`, `cancellation`), with up to two other words between them
(`update address` matches "update the address").
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from turnwatch.tokens import TOKEN

ABBREVIATIONS = frozenset(
    {
        *("mr", "mrs", "ms", "dr", "st", "sr", "jr", "vs", "etc", "e.g", "i.e", "approx"),
        *("no", "nr", "inc", "ltd", "co", "dept", "ref", "tel", "a.m", "p.m"),
    }
)
# An end mark followed by a space, a closing quote or bracket, or the end of the text; a newline.
_END = re.compile(r"[.?!]+(?=[\s\"'\u201d)\]]|$)|\n+")
_LAST_WORD = re.compile(r"([A-Za-z][A-Za-z.]*)\.*$")
_WORD = re.compile(rf"{TOKEN.pattern}|[\w'-]+")
_MAX_GAP_WORDS = 2
_PHRASE_WORD = re.compile(r"<[A-Z][A-Z0-9_]*>|[\w'-]+")
_NUMBER = re.compile(r"(?<![\w.])\d{1,3}(?:,\d{3})+(?:\.\d+)?|(?<![\w.])\d+(?:\.\d+)?")


def sentences(text: str) -> list[str]:
    found = []
    start = 0
    for mark in _END.finditer(text):
        if mark.group() == ".":
            before = _LAST_WORD.search(text, start, mark.start())
            if before is not None and before.group(1).casefold() in ABBREVIATIONS:
                continue
        piece = text[start : mark.end()].strip()
        if piece:
            found.append(piece)
        start = mark.end()
    tail = text[start:].strip()
    if tail:
        found.append(tail)
    return found


def is_question(sentence: str) -> bool:
    return sentence.rstrip().rstrip("\"')\u201d").endswith("?")


def numbers(text: str) -> set[float]:
    """The numbers written in a text (`1,250.50` is 1250.5); digits inside words are not."""
    return {float(match.group(0).replace(",", "")) for match in _NUMBER.finditer(text)}


def words(text: str) -> list[str]:
    """Lower-cased words; a de-identification token is one word."""
    return [match.group(0).casefold() for match in _WORD.finditer(text)]


def word_runs(text: str, length: int) -> set[tuple[str, ...]]:
    """Every run of `length` consecutive words (bigrams for repeats, longer runs for quotes)."""
    found = words(text)
    return {tuple(found[start : start + length]) for start in range(len(found) - length + 1)}


def phrase_pattern(phrases: Iterable[str]) -> re.Pattern[str] | None:
    """One pattern matching any of the phrases (None for no phrases). A word never matches
    inside a token (`date` does not name <DATE_TIME_...>); a phrase word written as a token type
    in angle brackets (`<DATE_TIME>`) matches any token of that type, for phrases
    de-identification tends to take whole ("change the delivery date" becomes
    "change <DATE_TIME_...>")."""
    gap = rf"(?:\W+[\w'-]+){{0,{_MAX_GAP_WORDS}}}?\W+"
    alternatives = []
    for phrase in phrases:
        parts = [_word_pattern(word) for word in _PHRASE_WORD.findall(phrase)]
        if parts:
            alternatives.append(gap.join(parts))
    if not alternatives:
        return None
    return re.compile("|".join(f"(?:{alternative})" for alternative in alternatives), re.I)


def _word_pattern(word: str) -> str:
    if word.startswith("<"):
        return re.escape(word[:-1]) + r"_[0-9a-f]{8}>"
    return r"(?<!<)\b" + re.escape(word.casefold()) + r"[\w'-]*"
