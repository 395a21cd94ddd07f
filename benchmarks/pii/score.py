"""Figures from labels and findings: per-type value and location recall, fully-masked rate,
word-level (token) recall, precision and F2, region precision, referential integrity.

Definitions (a region is one merged replaced span of the input text):
- location recall: labelled occurrences that some region overlaps.
- value recall: labelled occurrences whose value no longer appears in the output text (a value
  that is also an ordinary word is looked for with the words around it).
- fully masked: occurrences every word character of which lies inside regions.
- token recall / precision / F2: over the text's words (`\\w+`), as presidio-evaluator counts
  them: a word is PII inside an occurrence and predicted when a region overlaps it; F2 weighs
  recall twice.
- region precision: regions overlapping some occurrence, over all regions.
- one token per value: groups (one value, or one person) with two or more occurrences in a
  conversation whose occurrences are all covered by the same token.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field

from benchmarks.pii.model import LabelledText, Occurrence

WORD = re.compile(r"\w+")
CONTEXT_WORDS = 2


@dataclass
class TypeFigures:
    occurrences: int = 0
    located: int = 0
    removed: int = 0
    masked: int = 0


@dataclass
class Figures:
    by_type: dict[str, TypeFigures] = field(default_factory=lambda: defaultdict(TypeFigures))
    pii_words: int = 0
    predicted_words: int = 0
    true_words: int = 0
    regions: int = 0
    true_regions: int = 0
    groups: int = 0
    whole_groups: int = 0

    def add(self, labelled: LabelledText, regions: list[tuple[int, int]], output: str) -> None:
        text = labelled.text
        for item in labelled.occurrences:
            figures = self.by_type[item.entity]
            figures.occurrences += 1
            figures.located += any(s < item.end and item.start < e for s, e in regions)
            figures.masked += _masked(text, item, regions)
            figures.removed += not occurs(needle(text, item), output)
        spans = [(o.start, o.end) for o in labelled.occurrences]
        for word in WORD.finditer(text):
            pii = any(s <= word.start() and word.end() <= e for s, e in spans) or any(
                s < word.end() and word.start() < e for s, e in spans
            )
            predicted = any(s < word.end() and word.start() < e for s, e in regions)
            self.pii_words += pii
            self.predicted_words += predicted
            self.true_words += pii and predicted
        for s, e in regions:
            self.regions += 1
            self.true_regions += any(o_s < e and s < o_e for o_s, o_e in spans)

    def add_groups(self, tokens_by_group: dict[str, list[str | None]]) -> None:
        for tokens in tokens_by_group.values():
            if len(tokens) < 2:
                continue
            self.groups += 1
            self.whole_groups += None not in tokens and len(set(tokens)) == 1

    @property
    def token_recall(self) -> float:
        return self.true_words / self.pii_words if self.pii_words else 1.0

    @property
    def token_precision(self) -> float:
        return self.true_words / self.predicted_words if self.predicted_words else 1.0

    @property
    def f2(self) -> float:
        p, r = self.token_precision, self.token_recall
        return 5 * p * r / (4 * p + r) if p + r else 0.0

    @property
    def region_precision(self) -> float:
        return self.true_regions / self.regions if self.regions else 1.0

    def totals(self) -> TypeFigures:
        total = TypeFigures()
        for figures in self.by_type.values():
            total.occurrences += figures.occurrences
            total.located += figures.located
            total.removed += figures.removed
            total.masked += figures.masked
        return total


def _masked(text: str, item: Occurrence, regions: list[tuple[int, int]]) -> bool:
    return all(
        any(s <= position < e for s, e in regions)
        for position in range(item.start, item.end)
        if text[position].isalnum()
    )


def needle(text: str, item: Occurrence) -> str:
    """What a surviving occurrence looks like in the output: the value, with the words around
    it when it is also an ordinary word ("Thanks, Will!" rather than "will")."""
    if not item.ambiguous:
        return item.value
    left = text[: item.start]
    right = text[item.end :]
    before = " ".join(left.split(" ")[-CONTEXT_WORDS:]) if left else ""
    after = " ".join(right.split(" ")[:CONTEXT_WORDS]) if right else ""
    return before + item.value + after


def occurs(value: str, text: str) -> bool:
    """`value` in `text` as a whole (not the "3182" inside a hex id or a longer number)."""
    pattern = rf"(?<![0-9A-Za-z]){re.escape(value)}(?![0-9A-Za-z])"
    return re.search(pattern, text) is not None


def ratio(part: int, whole: int) -> float:
    return part / whole if whole else 1.0
