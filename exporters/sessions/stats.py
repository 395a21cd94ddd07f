"""Agreement figures with bootstrap confidence intervals over sessions.

Every figure is a function of count columns summed over sessions (true positives, false
positives...). The bootstrap resamples sessions, not turns, with replacement: a session's turns
move together, so a 40-turn session is not 40 independent samples (the evaluation guide's
point). The interval is the percentile interval of the resampled figure; resamples where the
figure is undefined (no positives drawn) are left out of it.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from pydantic import BaseModel

Figure = Callable[[np.ndarray], np.ndarray]
"""Summed counts, shape (..., columns) -> the figure, NaN where undefined."""

TP, FP, FN, TN = range(4)


class Interval(BaseModel):
    value: float | None
    low: float | None
    high: float | None

    def text(self) -> str:
        if self.value is None:
            return "-"
        if self.low is None or self.high is None:
            return f"{self.value:.2f}"
        return f"{self.value:.2f} [{self.low:.2f}, {self.high:.2f}]"


def _divide(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(
            denominator > 0, numerator / np.where(denominator > 0, denominator, 1), np.nan
        )


def precision(counts: np.ndarray) -> np.ndarray:
    return _divide(counts[..., TP], counts[..., TP] + counts[..., FP])


def recall(counts: np.ndarray) -> np.ndarray:
    return _divide(counts[..., TP], counts[..., TP] + counts[..., FN])


def specificity(counts: np.ndarray) -> np.ndarray:
    return _divide(counts[..., TN], counts[..., TN] + counts[..., FP])


def balanced_accuracy(counts: np.ndarray) -> np.ndarray:
    return (recall(counts) + specificity(counts)) / 2


def kappa(counts: np.ndarray) -> np.ndarray:
    """Cohen's kappa of two binary raters from their 2x2 table; NaN when chance agreement is
    certain (both raters gave one label only), where kappa is undefined."""
    tp, fp, fn, tn = (counts[..., i].astype(float) for i in (TP, FP, FN, TN))
    total = tp + fp + fn + tn
    observed = _divide(tp + tn, total)
    expected = _divide((tp + fp) * (tp + fn) + (fn + tn) * (fp + tn), total * total)
    with np.errstate(divide="ignore", invalid="ignore"):
        result = (observed - expected) / (1 - expected)
    return np.where(np.isnan(expected) | np.isclose(expected, 1), np.nan, result)


def ratio(counts: np.ndarray) -> np.ndarray:
    """Column 0 over column 1 (a share, such as flagged clean sessions over clean sessions)."""
    return _divide(counts[..., 0], counts[..., 1])


class Bootstrap:
    """Shared resampling plan: the same session draws for every figure of one table, so the
    figures' intervals come from the same resamples."""

    def __init__(self, samples: int, seed: int, confidence: float = 0.95) -> None:
        self.samples = samples
        self.seed = seed
        self.alpha = (1 - confidence) / 2
        self._plans: dict[int, np.ndarray] = {}

    def _plan(self, sessions: int) -> np.ndarray:
        if sessions not in self._plans:
            rng = np.random.default_rng([self.seed, sessions])
            self._plans[sessions] = rng.integers(0, sessions, size=(self.samples, sessions))
        return self._plans[sessions]

    def interval(self, per_session: np.ndarray, figure: Figure) -> Interval:
        """`per_session`: shape (sessions, columns) of counts."""
        if per_session.shape[0] == 0:
            return Interval(value=None, low=None, high=None)
        point = float(figure(per_session.sum(axis=0)))
        if np.isnan(point):
            return Interval(value=None, low=None, high=None)
        resampled = figure(per_session[self._plan(per_session.shape[0])].sum(axis=1))
        defined = resampled[~np.isnan(resampled)]
        if defined.size == 0:
            return Interval(value=point, low=None, high=None)
        low, high = np.quantile(defined, [self.alpha, 1 - self.alpha])
        return Interval(value=point, low=float(low), high=float(high))


def point(per_session: np.ndarray, figure: Figure) -> float | None:
    if per_session.shape[0] == 0:
        return None
    value = float(figure(per_session.sum(axis=0)))
    return None if np.isnan(value) else value


def best_threshold(
    labels: list[bool], values: list[float], default: float
) -> tuple[float | None, float | None]:
    """The threshold t (a score below t counts as a failure) whose predictions agree best with
    `labels` (True = failure) by Cohen's kappa; ties go to the threshold nearest `default`."""
    if not labels:
        return None, None
    failing = np.array(labels, dtype=bool)
    scores = np.array(values, dtype=float)
    candidates = sorted({*scores.tolist(), float(np.nextafter(scores.max(), np.inf)), default})
    best: tuple[float, float, float] | None = None
    for threshold in candidates:
        predicted = scores < threshold
        table = np.array([
            np.sum(predicted & failing), np.sum(predicted & ~failing),
            np.sum(~predicted & failing), np.sum(~predicted & ~failing),
        ])  # fmt: skip
        agreement = float(kappa(table))
        if np.isnan(agreement):
            continue
        rank = (agreement, -abs(threshold - default), threshold)
        if best is None or rank[:2] > best[:2]:
            best = rank
    if best is None:
        return None, None
    return best[2], best[0]
