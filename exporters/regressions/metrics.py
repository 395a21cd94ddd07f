"""Counters of the regression loop; outcome labels come from a fixed set."""

from __future__ import annotations

from typing import Literal

from prometheus_client import CollectorRegistry, Counter, Gauge

Outcome = Literal[
    "new_case",
    "recurrence",
    "new_revision",
    "duplicate",
    "not_deidentified",
    "schema_invalid",
    "write_error",
]


class RegressionMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.incidents = Counter(
            "turnwatch_regression_incidents",
            "Incidents received by the regression store, by outcome.",
            ["outcome"],
            registry=registry,
        )
        self.cases = Gauge(
            "turnwatch_regression_cases", "Regression case files kept.", registry=registry
        )
        self.evicted = Counter(
            "turnwatch_regression_cases_evicted",
            "Cases removed to stay within regressions.max_cases (least recently seen first).",
            registry=registry,
        )

    def count(self, outcome: Outcome) -> None:
        self.incidents.labels(outcome).inc()
