"""The collector's Prometheus metrics. Label values come from fixed sets only."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

REQUEST_LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
ASSEMBLY_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1)


class CollectorMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.requests = Counter(
            "turnwatch_otlp_requests_total",
            "OTLP export requests answered, by transport, signal and outcome.",
            ["transport", "signal", "outcome"],
            registry=registry,
        )
        self.request_rejections = Counter(
            "turnwatch_otlp_requests_rejected_total",
            "OTLP export requests refused as a whole, by reason.",
            ["transport", "reason"],
            registry=registry,
        )
        self.requests_in_flight = Gauge(
            "turnwatch_otlp_requests_in_flight",
            "OTLP export requests being read or decoded (at most otlp.max_concurrent_requests).",
            registry=registry,
        )
        self.request_duration = Histogram(
            "turnwatch_otlp_request_duration_seconds",
            "Time to decode and buffer one OTLP export request.",
            ["transport"],
            buckets=REQUEST_LATENCY_BUCKETS,
            registry=registry,
        )
        self.items_received = Counter(
            "turnwatch_spans_received_total",
            "Spans and log records decoded from accepted requests, by signal.",
            ["signal"],
            registry=registry,
        )
        self.items_rejected = Counter(
            "turnwatch_spans_rejected_total",
            "Spans and log records rejected (partial_success), by signal and reason.",
            ["signal", "reason"],
            registry=registry,
        )
        self.sessions_opened = Counter(
            "turnwatch_sessions_opened_total",
            "Conversation sessions opened (including re-opened revisions); a trace without a "
            "conversation id counts when it closes as a session of its own.",
            registry=registry,
        )
        self.sessions_trace_keyed = Counter(
            "turnwatch_sessions_trace_keyed_total",
            "Sessions keyed by their trace id because no span named a conversation id "
            "(each model call's trace becomes a session of its own).",
            registry=registry,
        )
        self.sessions_closed = Counter(
            "turnwatch_sessions_closed_total",
            "Sessions closed, by reason (idle, end_marker, turn_cap, byte_cap, evicted, shutdown).",
            ["reason"],
            registry=registry,
        )
        self.sessions_sampled = Counter(
            "turnwatch_sessions_sampled_total",
            "Sampling decisions on closed sessions, by decision reason.",
            ["reason"],
            registry=registry,
        )
        self.sessions_incomplete = Counter(
            "turnwatch_sessions_incomplete_total",
            "Sampled sessions flagged incomplete, by reason.",
            ["reason"],
            registry=registry,
        )
        self.sessions_open = Gauge(
            "turnwatch_sessions_open", "Sessions currently buffered.", registry=registry
        )
        self.buffered_bytes = Gauge(
            "turnwatch_session_buffer_bytes",
            "Memory the sessionizer holds: open sessions, content kept for the reopen window "
            "and its key maps (measured object sizes).",
            registry=registry,
        )
        self.handoff_depth = Gauge(
            "turnwatch_handoff_queue_depth",
            "Closed, sampled sessions waiting for the next stage.",
            registry=registry,
        )
        self.handoff_dropped = Counter(
            "turnwatch_handoff_dropped_total",
            "Sampled sessions dropped before the next stage, by reason.",
            ["reason"],
            registry=registry,
        )
        self.assembly_duration = Histogram(
            "turnwatch_session_assembly_seconds",
            "CPU time to assemble one sampled session into its wire record (parse, align, "
            "validate), of the thread that assembles it.",
            buckets=ASSEMBLY_BUCKETS,
            registry=registry,
        )
        self.observations_routed = Counter(
            "turnwatch_observations_routed_total",
            "Observations sealed onto turnwatch.observations (route mode), by route "
            "(conversation, trace) and forwarded by a sessionizer after a link (forwarded).",
            ["route"],
            registry=registry,
        )
        self.observations_dropped = Counter(
            "turnwatch_observations_dropped_total",
            "Observations (a trace link counts one) lost on the distributed hop, by reason "
            "(queue_full, publish_error, unsealable, invalid).",
            ["reason"],
            registry=registry,
        )
        self.observations_redelivered = Counter(
            "turnwatch_observations_redelivered_total",
            "Observations a sessionizer member skipped because it already had them (a replay "
            "after a partition moved: forwarded again, or of a session it closed).",
            registry=registry,
        )
        self.changelog_written = Counter(
            "turnwatch_changelog_written_total",
            "Sessionizer: state records for the next owner of a partition written to "
            "turnwatch.sessionizer.changelog, by kind (conversation, link).",
            ["kind"],
            registry=registry,
        )
        self.changelog_dropped = Counter(
            "turnwatch_changelog_dropped_total",
            "Sessionizer: changelog records not written, by reason (queue_full, publish_error); "
            "the next owner takes that link or conversation over as without a changelog.",
            ["reason"],
            registry=registry,
        )
        self.changelog_restored = Counter(
            "turnwatch_changelog_restored_total",
            "Sessionizer: changelog records read when a partition was gained, by outcome "
            "(restored, unreadable); read_failed counts partitions whose changelog could not "
            "be read at all.",
            ["outcome"],
            registry=registry,
        )
        self.routing_depth = Gauge(
            "turnwatch_routing_queue_depth",
            "Sealed observation records waiting for the bus (route mode).",
            registry=registry,
        )
        self.pending_traces = Gauge(
            "turnwatch_pending_traces",
            "Sessionizer: traces whose spans wait for a link to their conversation.",
            registry=registry,
        )
        self.handoff_delivered = Counter(
            "turnwatch_handoff_delivered_total",
            "Sampled sessions handed to the next stage.",
            registry=registry,
        )
