"""Prometheus metrics of the judge, created on the registry the caller passes in.

Label values come from fixed sets: `metric` (the five metric families, G-Eval criteria share
`geval`), `outcome`, `reason`, `kind`, `judge` (endpoint, heuristic). No session, criterion name or
model name ever becomes a label value.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram


class JudgeTelemetry:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.calls = Counter(
            "turnwatch_judge_calls_total",
            "Judge requests sent (repairs included), by metric and outcome.",
            ["metric", "outcome"],
            registry=registry,
        )
        self.cache = Counter(
            "turnwatch_judge_cache_total",
            "Judge verdict lookups, by result (hit, miss).",
            ["metric", "result"],
            registry=registry,
        )
        self.tokens = Counter(
            "turnwatch_judge_tokens_total",
            "Judge tokens spent, by metric and kind (prompt, completion).",
            ["metric", "kind"],
            registry=registry,
        )
        self.cost = Counter(
            "turnwatch_judge_cost_usd_total",
            "Judge spend in USD at the configured endpoint prices.",
            ["metric"],
            registry=registry,
        )
        self.errors = Counter(
            "turnwatch_judge_errors_total",
            "Judge request failures (each retry counted), by reason.",
            ["reason"],
            registry=registry,
        )
        self.skipped = Counter(
            "turnwatch_judge_skipped_total",
            "Judgements not attempted, by reason (budget, queue, overflow, sampling).",
            ["reason"],
            registry=registry,
        )
        self.scores = Counter(
            "turnwatch_judge_scores_total",
            "Judge metric results, by metric, judge (endpoint, heuristic) and outcome "
            "(scored, unscored).",
            ["metric", "judge", "outcome"],
            registry=registry,
        )
        self.duration = Histogram(
            "turnwatch_judge_request_duration_seconds",
            "Time of one judge request, retries included.",
            ["metric"],
            buckets=(0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
            registry=registry,
        )
