"""Phrase pools: every wording the generator uses, in two disjoint halves (dev and heldout).

A check tuned on the dev split is measured on heldout conversations written with other words,
so a figure that only holds for the dev phrasings shows up as a drop. `Pool.split` takes two
explicitly written lists (used where the structure of the sentence itself should differ);
`P(...)` alternates one written list into the two halves.
"""

from __future__ import annotations

import random
import string
from collections.abc import Sequence
from typing import Literal

Split = Literal["dev", "heldout"]

_FIELDS = string.Formatter()


class Pool:
    def __init__(self, dev: Sequence[str], heldout: Sequence[str]) -> None:
        if not dev or not heldout:
            raise ValueError("a pool needs phrasings in both splits")
        overlap = set(dev) & set(heldout)
        if overlap:
            raise ValueError(f"phrasings in both splits: {sorted(overlap)[:3]}")
        self.dev = tuple(dev)
        self.heldout = tuple(heldout)

    @classmethod
    def split(cls, dev: Sequence[str], heldout: Sequence[str]) -> Pool:
        return cls(dev, heldout)

    def of(self, split: Split) -> tuple[str, ...]:
        return self.dev if split == "dev" else self.heldout


def P(*items: str) -> Pool:
    """One written list, alternated into dev (even positions) and heldout (odd positions)."""
    if len(items) < 2:
        raise ValueError("a pool needs at least two phrasings")
    return Pool(items[0::2], items[1::2])


def slot_names(text: str) -> list[str]:
    return [field for _, field, _, _ in _FIELDS.parse(text) if field]


class Picker:
    """Draws phrasings for one conversation, avoiding a repeat while the pool has fresh ones."""

    def __init__(self, rng: random.Random, split: Split) -> None:
        self.rng = rng
        self.split = split
        self._used: set[str] = set()

    def pick(self, pool: Pool) -> str:
        options = pool.of(self.split)
        fresh = [text for text in options if text not in self._used]
        choice = self.rng.choice(fresh or options)
        self._used.add(choice)
        return choice

    def fill(self, pool: Pool, **slots: object) -> str:
        text = self.pick(pool)
        missing = [name for name in slot_names(text) if name not in slots]
        if missing:
            raise KeyError(f"phrase {text!r} needs slots {missing}")
        return text.format(**slots)
