"""Turn findings into replacements: overlapping findings merge into one region (the union, so
no uncovered remainder leaks), and each region becomes the token of its canonical value."""

from __future__ import annotations

from collections.abc import Callable

from turnwatch.collector.deid.cache import Finding, Findings


def merge(findings: Findings, preferred: frozenset[str] = frozenset()) -> list[Finding]:
    """Overlapping findings as one region each. A `preferred` entity (a configured custom
    pattern's) names the region it is part of: the operator said what that value is."""
    merged: list[Finding] = []
    for item in sorted(findings, key=lambda f: (f.start, -f.end)):
        if merged and item.start < merged[-1].end:
            last = merged[-1]
            # The union keeps the type of its most confident (then longest) member, and a
            # member's key only if that member is the whole union.
            start, end = last.start, max(last.end, item.end)
            # A member that is the whole union names it ("4539 1488 0343 6467" is a card even
            # if a 12-digit id recognizer scores a part of it higher).
            best = max(
                (last, item),
                key=lambda f: (
                    f.entity in preferred,
                    (f.start, f.end) == (start, end),
                    f.score,
                    f.end - f.start,
                ),
            )
            keyed = next(
                (f.key for f in (last, item) if f.key and (f.start, f.end) == (start, end)), None
            )
            score = max(last.score, item.score) if best.entity in preferred else best.score
            merged[-1] = Finding(start, end, best.entity, score, keyed)
        else:
            merged.append(item)
    return merged


def replace(text: str, regions: list[Finding], token: Callable[[Finding, str], str]) -> str:
    """`text` with every (merged, ordered) region replaced by `token(region, its text)`."""
    if not regions:
        return text
    pieces: list[str] = []
    position = 0
    for region in regions:
        pieces.append(text[position : region.start])
        pieces.append(token(region, text[region.start : region.end]))
        position = region.end
    pieces.append(text[position:])
    return "".join(pieces)
