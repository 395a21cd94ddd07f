"""Carry every value found anywhere in a session to its other occurrences in the same session.

The recognizers see each text alone: a reference typed in the user's message is found, but the
same reference in a tool result or the bot's echo may not be. A value detected once in the
session is therefore replaced wherever else it appears in that session: as the same words (any
case), or, for numbers and codes, in any format with the same canonical value ("415-732-9184"
found, "(415) 732 9184" replaced too). People are handled by `people.py`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import regex
from turnwatch.collector.deid.alternation import whole_words
from turnwatch.collector.deid.cache import Finding, Findings
from turnwatch.collector.deid.pseudonym import KnownValues

MIN_PROPAGATED_CHARS = 3
# Words of one run tried as a value (a value is a few groups; a table of numbers is not one).
MAX_PIECES = 12
PIECE = regex.compile(r"\(?\+?\w+(?:[().\-/]+\w+)*")
# Numbers and codes in any format: digits, letters and the separators people type between them.
NUMBER_RUN = regex.compile(r"(?<![\w+])\+?(?=[\w\s().\-/]*\d)[\w(][\w\s().\-/]*[\w)](?![\w])")


def propagate(
    findings: dict[str, Findings], canonical: Callable[[str], str]
) -> dict[str, Findings]:
    # The same runs recur across a session's texts; remembered for this session only, so no
    # value outlives it in memory.
    canonical = functools.cache(canonical)
    words: dict[str, Finding] = {}
    numbers: dict[str, Finding] = {}
    for text, found in findings.items():
        for item in found:
            if item.entity == "PERSON":
                continue
            value = text[item.start : item.end]
            if len(value.strip()) < MIN_PROPAGATED_CHARS:
                continue
            target = numbers if any(ch.isdigit() for ch in value) else words
            key = item.key or canonical(value)
            if key not in target or item.score > target[key].score:
                target[key] = Finding(0, 0, item.entity, item.score, key)
    if not words and not numbers:
        return findings
    by_word = words
    pattern = whole_words(by_word, findings)
    known = KnownValues(numbers, canonical) if numbers else None
    out: dict[str, Findings] = {}
    for text, found in findings.items():
        extra: list[Finding] = []
        if pattern is not None:
            for match in pattern.finditer(text):
                entry = by_word.get(" ".join(match.group().casefold().split()))
                if entry is not None:
                    extra.append(Finding(*match.span(), entry.entity, 0.0, entry.key))
        if known is not None:
            extra += _numbers(text, numbers, known)
        out[text] = found + tuple(extra)
    return out


def _numbers(text: str, numbers: dict[str, Finding], known: KnownValues) -> list[Finding]:
    """Sub-runs of digit runs (whole words, longest first) whose canonical value is known."""
    extra = []
    for run in NUMBER_RUN.finditer(text):
        pieces = list(PIECE.finditer(run.group()))[:MAX_PIECES]
        taken = 0
        for first in range(len(pieces)):
            if first < taken:
                continue
            for last in range(len(pieces) - 1, first - 1, -1):
                start = run.start() + pieces[first].start()
                end = run.start() + pieces[last].end()
                key = known.get(text[start:end])
                if key is not None:
                    entry = numbers[key]
                    extra.append(Finding(start, end, entry.entity, 0.0, entry.key))
                    taken = last + 1
                    break
    return extra
