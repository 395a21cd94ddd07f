"""Prometheus metrics of the de-identification stage. Label values come from fixed sets."""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client import CollectorRegistry, Counter, Histogram
from turnwatch.collector.deid.deidentifier import QuarantineReason

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
OTHER = "other"


class DeidMetrics:
    def __init__(self, registry: CollectorRegistry, entities: Iterable[str]) -> None:
        self.known_entities = frozenset(entities) | {"USER_ID"}
        self.entities = Counter(
            "turnwatch_deid_entities_total",
            "PII values replaced by pseudonyms, by entity type.",
            ["entity"],
            registry=registry,
        )
        self.sessions = Counter(
            "turnwatch_deid_sessions_total",
            "Sessions de-identified and passed on.",
            registry=registry,
        )
        self.quarantined = Counter(
            "turnwatch_deid_sessions_quarantined_total",
            "Sessions withheld because de-identification failed, by reason.",
            ["reason"],
            registry=registry,
        )
        self.quarantine_stored = Counter(
            "turnwatch_deid_quarantine_stored_total",
            "Quarantined sessions written encrypted to the local quarantine, by outcome.",
            ["outcome"],
            registry=registry,
        )
        self.latency = Histogram(
            "turnwatch_deid_duration_seconds",
            "Time to de-identify one session, including waiting for the worker thread.",
            buckets=LATENCY_BUCKETS,
            registry=registry,
        )
        self.texts = Counter(
            "turnwatch_deid_texts_total",
            "Distinct texts per session, by how their findings were obtained.",
            ["source"],
            registry=registry,
        )
        for reason in QuarantineReason.ALL:
            self.quarantined.labels(reason)

    def count_entities(self, counts: dict[str, int]) -> None:
        for entity, count in counts.items():
            label = entity if entity in self.known_entities else OTHER
            self.entities.labels(label).inc(count)
