"""Carry every value found anywhere in a session to its other occurrences in the same session.

The NER model sees each text alone: it tags "pedro nguyen" after "my name is" but not in the
bot's echo "I have noted pedro nguyen". A value detected once in the session is therefore
replaced wherever else it appears in that session (whole words, any case).
"""

from __future__ import annotations

import regex
from turnwatch.collector.deid.cache import Finding, Findings

MIN_PROPAGATED_CHARS = 3


def propagate(findings: dict[str, Findings]) -> dict[str, Findings]:
    values: dict[str, Finding] = {}
    for text, found in findings.items():
        for item in found:
            value = text[item.start : item.end].casefold()
            if len(value.strip()) >= MIN_PROPAGATED_CHARS and (
                value not in values or item.score > values[value].score
            ):
                values[value] = item
    if not values:
        return findings
    alternatives = "|".join(regex.escape(value) for value in sorted(values, key=len, reverse=True))
    pattern = regex.compile(rf"(?<!\w)(?:{alternatives})(?!\w)", regex.IGNORECASE)
    out: dict[str, Findings] = {}
    for text, found in findings.items():
        extra = tuple(
            Finding(m.start(), m.end(), values[m.group().casefold()].entity, 0.0)
            for m in pattern.finditer(text)
            if m.group().casefold() in values
        )
        out[text] = found + extra
    return out
