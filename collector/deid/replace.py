"""Replace findings in a text with pseudonyms.

Overlapping findings are merged into their union before replacement: an e-mail address that is
also partly a URL, or an IBAN that the NER model partly tags as a date, must disappear whole, or
the uncovered remainder would leak. The union keeps the type of its most confident member, with
one exception: the NER model calls any run of digit groups a date ("07700 900966" is DATE_TIME
at 0.85, above the phone recognizer's 0.4), and a calendar date never needs more than eight
digits, so a longer identifier overlapping a DATE_TIME keeps its own type. Without it one phone
number gets a phone pseudonym in a record and a date pseudonym in a message, and no check can
tell that the assistant read out a stranger's number.
"""

from __future__ import annotations

from collections.abc import Callable

from turnwatch.collector.deid.cache import Finding, Findings

DATE_ENTITY = "DATE_TIME"
MAX_DATE_DIGITS = 8


def merge(text: str, findings: Findings) -> list[Finding]:
    merged: list[Finding] = []
    for item in sorted(findings, key=lambda f: (f.start, -f.end)):
        if merged and item.start < merged[-1].end:
            last = merged[-1]
            best = _typed_by(text, last, item)
            merged[-1] = Finding(last.start, max(last.end, item.end), best.entity, best.score)
        else:
            merged.append(item)
    return merged


def _typed_by(text: str, one: Finding, other: Finding) -> Finding:
    """The member whose type the union keeps: an identifier too long to be a date over the
    model's DATE_TIME guess, otherwise the most confident, then the longest."""
    for date, identifier in ((one, other), (other, one)):
        if date.entity == DATE_ENTITY != identifier.entity:
            digits = sum(ch.isdigit() for ch in text[identifier.start : identifier.end])
            if digits > MAX_DATE_DIGITS:
                return identifier
    return max((one, other), key=lambda f: (f.score, f.end - f.start))


def replace(
    text: str, findings: Findings, token: Callable[[str, str], str]
) -> tuple[str, list[str]]:
    """Return the text with every finding replaced, and the entity type of each replacement."""
    if not findings:
        return text, []
    pieces: list[str] = []
    entities: list[str] = []
    position = 0
    for item in merge(text, findings):
        pieces.append(text[position : item.start])
        pieces.append(token(item.entity, text[item.start : item.end]))
        entities.append(item.entity)
        position = item.end
    pieces.append(text[position:])
    return "".join(pieces), entities
