"""Intervals and sample sizes for a release gate.

Conversations are the unit of evidence: the turns (and the repeated runs) of one conversation
are not independent samples, so every interval is a bootstrap over cases (paired: the same
cases replayed on both releases, resampled together) or over sessions (unpaired), never over
turns or runs. The percentile bootstrap uses a fixed seed, so the same files give the same
report.

The sample size needed to detect a drop of `effect` at a given power plans with the variance of
a paired difference per case, floored at `effect * (1 - effect)`: the variance when the drop comes
from a share `effect` of cases that break outright, which is how a regression looks in
deterministic replays. A sample whose observed differences are all zero (two identical
releases) would otherwise claim to detect any drop with two cases.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from math import ceil, sqrt
from statistics import NormalDist, pvariance
from typing import TypeVar

from pydantic import Field

from turnwatch.schema import WireModel

T = TypeVar("T")


class Interval(WireModel):
    estimate: float
    low: float
    high: float

    def excludes_zero(self) -> bool:
        return self.high < 0 or self.low > 0


def z(probability: float) -> float:
    return NormalDist().inv_cdf(probability)


def bootstrap(
    items: Sequence[T],
    statistic: Callable[[Sequence[T]], float | None],
    resamples: int,
    confidence: float,
    seed: int,
) -> Interval | None:
    """The statistic of `items` and its percentile bootstrap interval (resampling the items,
    e.g. cases); None when the statistic is undefined on the items themselves."""
    return bootstrap_two(items, [], lambda drawn, _: statistic(drawn), resamples, confidence, seed)


def bootstrap_two(
    first: Sequence[T],
    second: Sequence[T],
    statistic: Callable[[Sequence[T], Sequence[T]], float | None],
    resamples: int,
    confidence: float,
    seed: int,
) -> Interval | None:
    """The same for a statistic of two independent samples, each resampled on its own.
    Resamples on which the statistic is undefined (a rate over a resample with nothing to
    count) are left out."""
    estimate = statistic(first, second)
    if estimate is None:
        return None
    rng = random.Random(seed)
    drawn = (
        statistic(rng.choices(first, k=len(first)), rng.choices(second, k=len(second)))
        for _ in range(resamples)
    )
    estimates = sorted(value for value in drawn if value is not None)
    return Interval(
        estimate=estimate,
        low=_quantile(estimates, (1 - confidence) / 2),
        high=_quantile(estimates, (1 + confidence) / 2),
    )


def _quantile(ordered: list[float], share: float) -> float:
    position = share * (len(ordered) - 1)
    below = int(position)
    above = min(below + 1, len(ordered) - 1)
    return ordered[below] + (ordered[above] - ordered[below]) * (position - below)


def p95(values: Sequence[float]) -> float | None:
    return _quantile(sorted(values), 0.95) if values else None


class Power(WireModel):
    detectable: float | None = Field(
        description="Smallest drop the sample detects at the power asked (None: no sample)."
    )
    needed: int = Field(description="Cases (or sessions per side) needed to detect `effect`.")
    effect: float


def power(
    differences: Sequence[float], effect: float, confidence: float, power_wanted: float
) -> Power:
    """Minimum detectable effect of a paired sample and the cases needed for `effect`."""
    observed = pvariance(differences) if len(differences) > 1 else 0.0
    return _power(len(differences), observed, effect, confidence, power_wanted)


def power_unpaired(
    baseline: Sequence[float],
    candidate: Sequence[float],
    effect: float,
    confidence: float,
    power_wanted: float,
) -> Power:
    """The same for two independent samples (per side; planned on their pooled variance x 2)."""
    pooled = pvariance([*baseline, *candidate]) if len(baseline) + len(candidate) > 1 else 0.0
    size = min(len(baseline), len(candidate))
    return _power(size, 2 * pooled, effect, confidence, power_wanted)


def _power(
    size: int, observed: float, effect: float, confidence: float, power_wanted: float
) -> Power:
    variance = max(observed, effect * (1 - effect))
    multiplier = z(1 - (1 - confidence) / 2) + z(power_wanted)
    detectable = multiplier * sqrt(variance / size) if size else None
    return Power(
        detectable=detectable, needed=ceil(multiplier**2 * variance / effect**2), effect=effect
    )
