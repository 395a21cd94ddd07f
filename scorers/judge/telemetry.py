"""Prometheus metrics of the judge, created on the registry the caller passes in.

Label values come from fixed sets: `metric` (the five metric families, G-Eval criteria share
`geval`), `outcome`, `reason`, `kind`, `judge` (endpoint, heuristic). No session, criterion name or
model name ever becomes a label value.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from turnwatch.scorers.judge.watch import EndpointWatch

SESSION_OUTCOMES = ("complete", "session_deadline", "shutdown", "backlog_full", "publish_failed")


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
            "Judge request failures and malformed answers (each retry counted), by reason.",
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
        self.inflight = Gauge(
            "turnwatch_judge_inflight",
            "Judge HTTP requests on the wire.",
            registry=registry,
        )
        self.unanswered = Gauge(
            "turnwatch_judge_unanswered_seconds",
            "Time since the first judge request sent after the endpoint last answered, while "
            "calls wait on it (0 = answering).",
            registry=registry,
        )
        self.sessions_inflight = Gauge(
            "turnwatch_judge_sessions_inflight",
            "Sessions whose checks are published and whose judge metrics are being worked out.",
            registry=registry,
        )
        self.sessions = Counter(
            "turnwatch_judge_sessions_total",
            "Sessions' judge metrics, by how they ended: complete, session_deadline, shutdown, "
            "backlog_full (not judged), publish_failed.",
            ["outcome"],
            registry=registry,
        )
        for outcome in SESSION_OUTCOMES:
            self.sessions.labels(outcome)

    def watch(self, watch: EndpointWatch) -> None:
        """Read the endpoint's in-flight requests and silence from `watch` at each scrape."""
        self.inflight.set_function(lambda: watch.inflight)
        self.unanswered.set_function(watch.unanswered_seconds)
