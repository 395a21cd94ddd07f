"""Counters and gauges of the session store; every label comes from a fixed set."""

from __future__ import annotations

from typing import Literal

from prometheus_client import CollectorRegistry, Counter, Gauge

WriteOutcome = Literal["stored", "updated", "duplicate", "stale", "not_deidentified", "write_error"]
EvictReason = Literal["age", "count", "bytes"]
STATES = ("awaiting_score", "scored", "reviewed")


class SessionStoreMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.writes = Counter(
            "turnwatch_session_store_writes",
            "Records taken by the session store, by record and outcome.",
            ["record", "outcome"],
            registry=registry,
        )
        self.evicted = Counter(
            "turnwatch_session_store_evicted",
            "Session revisions deleted by retention, by the bound that deleted them.",
            ["reason"],
            registry=registry,
        )
        self.sessions = Gauge(
            "turnwatch_session_store_sessions",
            "Session revisions kept, by state.",
            ["state"],
            registry=registry,
        )
        self.bytes = Gauge(
            "turnwatch_session_store_bytes",
            "Compressed bytes of the session revisions kept (reviewed ones included).",
            registry=registry,
        )
        self.reviews = Counter(
            "turnwatch_session_reviews",
            "Reviews saved, by where they came from.",
            ["source"],
            registry=registry,
        )
        for state in STATES:
            self.sessions.labels(state)

    def wrote(self, record: str, outcome: WriteOutcome) -> None:
        self.writes.labels(record, outcome).inc()


class AgreementMetrics:
    """What `turnwatch calibrate --prometheus FILE` writes (label values: judge metric names and
    the evaluation guide's slices, both fixed sets)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.agreement = Gauge(
            "turnwatch_judge_agreement",
            "Cohen's kappa between reviewed labels and the judge metric, per failure slice.",
            ["metric", "slice"],
            registry=registry,
        )
