"""Replace findings in a text with pseudonyms.

Overlapping findings are merged into their union before replacement: an e-mail address that is
also partly a URL, or an IBAN that the NER model partly tags as a date, must disappear whole, or
the uncovered remainder would leak.
"""

from __future__ import annotations

from collections.abc import Callable

from turnwatch.collector.deid.cache import Finding, Findings


def merge(findings: Findings) -> list[Finding]:
    merged: list[Finding] = []
    for item in sorted(findings, key=lambda f: (f.start, -f.end)):
        if merged and item.start < merged[-1].end:
            last = merged[-1]
            # The union keeps the type of its most confident (then longest) member.
            best = max((last, item), key=lambda f: (f.score, f.end - f.start))
            merged[-1] = Finding(last.start, max(last.end, item.end), best.entity, best.score)
        else:
            merged.append(item)
    return merged


def replace(
    text: str, findings: Findings, token: Callable[[str, str], str]
) -> tuple[str, list[str]]:
    """Return the text with every finding replaced, and the entity type of each replacement."""
    if not findings:
        return text, []
    pieces: list[str] = []
    entities: list[str] = []
    position = 0
    for item in merge(findings):
        pieces.append(text[position : item.start])
        pieces.append(token(item.entity, text[item.start : item.end]))
        entities.append(item.entity)
        position = item.end
    pieces.append(text[position:])
    return "".join(pieces), entities
