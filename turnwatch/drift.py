"""In-process drift: per (service, metric), the latest scores against the scores just before them.

Two windows slide over the stream of scores: `recent` holds the last N, `baseline` the M before
those (a score leaving `recent` enters `baseline`), so a shift shows up in `recent` before it
contaminates `baseline`. Windows count scores rather than time: a quiet service keeps its last
comparison instead of comparing two nearly empty windows. The guard (`min_recent`,
`min_baseline`) reports NaN until both windows hold enough scores; NaN compares false in PromQL,
so a fresh or quiet service cannot alarm.
"""

from __future__ import annotations

import bisect
import math
from collections import deque
from dataclasses import dataclass

from pydantic import Field, model_validator

from turnwatch.section import Section


class DriftConfig(Section):
    enabled: bool = True
    recent_window: int = Field(
        default=200, gt=0, description="Latest scores per (service, metric) compared with..."
    )
    baseline_window: int = Field(default=2_000, gt=0, description="...the scores just before them.")
    min_recent: int = Field(
        default=50,
        gt=0,
        description="Fewer recent scores than this: the drift gauges read NaN (no alarm).",
    )
    min_baseline: int = Field(default=200, gt=0, description="Same guard for the baseline.")
    min_stddev: float = Field(
        default=0.02,
        gt=0,
        description="Floor on the baseline's standard deviation, so a constant baseline does "
        "not turn any small change into an infinite shift.",
    )

    @model_validator(mode="after")
    def _guards_fit(self) -> DriftConfig:
        # A guard larger than its window could never be met: drift would silently never show.
        if self.min_recent > self.recent_window:
            raise ValueError("min_recent must not exceed recent_window")
        if self.min_baseline > self.baseline_window:
            raise ValueError("min_baseline must not exceed baseline_window")
        return self


SCORE_BUCKETS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
"""Bins of graded scores on [0, 1], for the exported histogram and for drift's PSI alike, so a
dashboard's bucket view and the PSI gauge agree (latency defaults would put all scores in 3)."""

PSI_FLOOR = 1e-4
"""Share used for an empty bin: PSI has ln(r/b) and an empty bin on either side would be ±inf."""


class Window:
    """A bounded window of scores with running sums and per-bin counts (O(bins) per update)."""

    def __init__(self, size: int, edges: tuple[float, ...]) -> None:
        self.values: deque[float] = deque()
        self.size = size
        self.edges = edges
        self.counts = [0] * (len(edges) + 1)
        self.total = 0.0
        self.squares = 0.0
        self._updates = 0

    def _bin(self, value: float) -> int:
        # Same bins as the exported histogram: bin i holds edges[i-1] < value <= edges[i].
        return bisect.bisect_left(self.edges, value)

    def push(self, value: float) -> float | None:
        """Add a score; return the one that fell out of a full window."""
        self.values.append(value)
        self.counts[self._bin(value)] += 1
        self.total += value
        self.squares += value * value
        evicted = None
        if len(self.values) > self.size:
            evicted = self.values.popleft()
            self.counts[self._bin(evicted)] -= 1
            self.total -= evicted
            self.squares -= evicted * evicted
        self._updates += 1
        if self._updates >= self.size:
            # Adding and subtracting floats forever accumulates rounding error; resum now and then.
            self._updates = 0
            self.total = math.fsum(self.values)
            self.squares = math.fsum(v * v for v in self.values)
        return evicted

    def __len__(self) -> int:
        return len(self.values)

    def mean(self) -> float:
        return self.total / len(self.values)

    def stddev(self) -> float:
        n = len(self.values)
        variance = max(self.squares / n - (self.total / n) ** 2, 0.0)
        return math.sqrt(variance)

    def shares(self) -> list[float]:
        n = len(self.values)
        return [max(count / n, PSI_FLOOR) for count in self.counts]


@dataclass(frozen=True, slots=True)
class DriftReading:
    mean_shift: float
    """(recent mean - baseline mean) / baseline stddev; negative = scores fell."""
    psi: float
    """Population stability index of the recent score histogram against the baseline's."""
    recent: int
    baseline: int


class DriftTracker:
    """The two windows of one (service, metric)."""

    def __init__(self, config: DriftConfig, edges: tuple[float, ...]) -> None:
        self.config = config
        self.recent = Window(config.recent_window, edges)
        self.baseline = Window(config.baseline_window, edges)

    def add(self, value: float) -> DriftReading:
        evicted = self.recent.push(value)
        if evicted is not None:
            self.baseline.push(evicted)
        return self.reading()

    def reading(self) -> DriftReading:
        recent, baseline = len(self.recent), len(self.baseline)
        if recent < self.config.min_recent or baseline < self.config.min_baseline:
            return DriftReading(math.nan, math.nan, recent, baseline)
        spread = max(self.baseline.stddev(), self.config.min_stddev)
        shift = (self.recent.mean() - self.baseline.mean()) / spread
        psi = sum(
            (r - b) * math.log(r / b)
            for r, b in zip(self.recent.shares(), self.baseline.shares(), strict=True)
        )
        return DriftReading(shift, psi, recent, baseline)
