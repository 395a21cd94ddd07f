"""The corpus's composition: which conversation carries which defects and near misses.

Every defect kind is planted `per_defect` times and every near-miss kind `per_near_miss` times,
so each kind is measured on several conversations; most defect conversations carry one defect,
some two of different checks (so the first broken transition has to pick the earlier one). What
is left over is clean. Kinds that need an earlier conversation (another session's user, a public
value typed by someone else, a returning user) are kept out of the first quarter.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from benchmarks.corpus.kinds import DEFECTS, NEAR_MISSES

NEEDS_HISTORY = frozenset(
    {
        "cross_user.other_session",
        "cross_user.shared_public_value",
        "cross_user.same_user_new_session",
    }
)
CLEAN_SHARE = 0.1


@dataclass(frozen=True)
class Plan:
    index: int
    domain: str
    defects: tuple[str, ...]
    near_misses: tuple[str, ...]

    @property
    def kinds(self) -> tuple[str, ...]:
        return (*self.defects, *self.near_misses)

    @property
    def returning(self) -> bool:
        return "cross_user.same_user_new_session" in self.near_misses


def _check(kind: str) -> str:
    return DEFECTS[kind].check if kind in DEFECTS else NEAR_MISSES[kind]


def _pack(slots: list[str], bundle: list[str], limit: int) -> None:
    """Move up to `limit - len(bundle)` kinds of checks not yet in the bundle into it."""
    for kind in list(slots):
        if len(bundle) >= limit:
            return
        if all(_check(kind) != _check(other) for other in bundle):
            slots.remove(kind)
            bundle.append(kind)


def schedule(rng: random.Random, count: int, domains: list[str]) -> list[Plan]:
    per_defect = max(3, round(count * 0.55 / len(DEFECTS)))
    per_near_miss = max(3, round(count * 0.7 / len(NEAR_MISSES)))
    defect_slots = [kind for kind in DEFECTS for _ in range(per_defect)]
    near_slots = [kind for kind in NEAR_MISSES for _ in range(per_near_miss)]
    rng.shuffle(defect_slots)
    rng.shuffle(near_slots)
    bundles: list[tuple[list[str], list[str]]] = []
    while defect_slots:
        defects = [defect_slots.pop()]
        if rng.random() < 0.15:
            _pack(defect_slots, defects, 2)
        combined = list(defects)
        if rng.random() < 0.3:
            _pack(near_slots, combined, len(defects) + 1)
        bundles.append((defects, combined[len(defects) :]))
    while near_slots:
        near = [near_slots.pop()]
        _pack(near_slots, near, rng.choice([1, 2, 2, 3]))
        bundles.append(([], near))
    clean = count - len(bundles)
    if clean < CLEAN_SHARE * count:
        raise ValueError(f"{count} conversations are too few for every kind and clean ones")
    bundles += [([], []) for _ in range(clean)]
    rng.shuffle(bundles)
    early = count // 4
    too_early = {
        index
        for index, (defects, near) in enumerate(bundles[:early])
        if NEEDS_HISTORY & {*defects, *near}
    }
    ordered = [bundle for index, bundle in enumerate(bundles) if index not in too_early]
    for index in sorted(too_early):
        ordered.insert(rng.randrange(early, len(ordered) + 1), bundles[index])
    return [
        Plan(index, domains[index % len(domains)], tuple(defects), tuple(near))
        for index, (defects, near) in enumerate(ordered)
    ]
