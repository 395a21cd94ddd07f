"""The bus's Prometheus metrics. Topic labels come from the fixed topics (or `other`)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge

from turnwatch.bus.records import TOPICS

CONSUME_OUTCOMES = ("processed", "duplicate", "dead_lettered", "handler_error")


class BusMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.produced = Counter(
            "turnwatch_bus_records_produced_total",
            "Records the bus acknowledged (the broker, or the embedded queue), by topic.",
            ["topic"],
            registry=registry,
        )
        self.produce_failures = Counter(
            "turnwatch_bus_produce_failures_total",
            "Sends the broker did not acknowledge (the record is spooled or retried).",
            ["topic", "reason"],
            registry=registry,
        )
        self.rejected = Counter(
            "turnwatch_bus_records_rejected_total",
            "Records refused before sending, by topic and reason (too_large).",
            ["topic", "reason"],
            registry=registry,
        )
        self.consumed = Counter(
            "turnwatch_bus_records_consumed_total",
            "Records taken from the bus, by topic and outcome.",
            ["topic", "outcome"],
            registry=registry,
        )
        self.dead_lettered = Counter(
            "turnwatch_bus_dead_letter_total",
            "Records sent to the dead letter topic, by reason.",
            ["reason"],
            registry=registry,
        )
        self.commits = Counter(
            "turnwatch_bus_commits_total",
            "Consumer offset commits, by outcome (committed, failed).",
            ["outcome"],
            registry=registry,
        )
        self.lag = Gauge(
            "turnwatch_bus_consumer_lag_records",
            "Records on this member's partitions not yet processed, by topic.",
            ["topic"],
            registry=registry,
        )
        self.queue_depth = Gauge(
            "turnwatch_bus_queue_depth",
            "Embedded bus: records not acknowledged (waiting, or held by a handler), by topic.",
            ["topic"],
            registry=registry,
        )
        self.spool_records = Gauge(
            "turnwatch_bus_spool_records",
            "Records held in the on-disk spool waiting for the broker.",
            registry=registry,
        )
        self.spool_bytes = Gauge(
            "turnwatch_bus_spool_bytes", "Bytes of the on-disk spool.", registry=registry
        )
        self.spooled = Counter(
            "turnwatch_bus_spooled_total",
            "Records written to the spool because the broker was unreachable.",
            registry=registry,
        )
        self.spool_full = Counter(
            "turnwatch_bus_spool_full_total",
            "Times a publish had to wait because the spool (or embedded queue) was full.",
            registry=registry,
        )
        self.lost_at_shutdown = Counter(
            "turnwatch_bus_lost_at_shutdown_total",
            "Embedded bus without its spool: records still in memory when the process stopped "
            "(lost), by topic.",
            ["topic"],
            registry=registry,
        )
        self.broker_up = Gauge(
            "turnwatch_bus_broker_up",
            "1 when the Kafka broker answered the last probe, else 0.",
            registry=registry,
        )
        for topic in TOPICS:
            self.produced.labels(topic)
            for outcome in CONSUME_OUTCOMES:
                self.consumed.labels(topic, outcome)
        for outcome in ("committed", "failed"):
            self.commits.labels(outcome)
