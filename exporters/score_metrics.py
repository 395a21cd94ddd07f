"""Prometheus metrics for score records (the exporter stage's output on `/metrics`).

Every label value is bounded: `service`, `metric`, `check`, `judge`, `model` and unscored reasons
pass through limiters (allow-list or first-N, then `other`); `severity`, `outcome`, `status` and
`direction` come from fixed enums. Session, conversation, user and trace ids never become labels.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from turnwatch.drift import SCORE_BUCKETS

SESSION_LATENCY_BUCKETS = (0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300)
END_TO_END_BUCKETS = (1, 5, 15, 30, 60, 90, 120, 180, 300, 600, 1800, 3600)
"""From a session's last span to its score on /metrics: at least the idle timeout (60 s default)."""
EXPORT_DELAY_BUCKETS = (0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300)

RECORD_OUTCOMES = ("exported", "duplicate")
JOINT_OUTCOMES = ("success", "failure", "unscored")


class ScoreMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.records = Counter(
            "turnwatch_exporter_records_total",
            "Score records taken by the exporter, by outcome (exported, duplicate).",
            ["outcome"],
            registry=registry,
        )
        self.claim_failures = Counter(
            "turnwatch_exporter_claim_failures_total",
            "Attempts to claim a score record's count in the session store that failed; the "
            "record waits, uncommitted, and is tried again.",
            registry=registry,
        )
        self.label_overflow = Counter(
            "turnwatch_exporter_label_overflow_total",
            "Label values replaced by `other` because they were not allowed or over the limit.",
            ["label"],
            registry=registry,
        )
        self.sessions_scored = Counter(
            "turnwatch_sessions_scored_total",
            "Session revisions whose score record was exported.",
            ["service"],
            registry=registry,
        )
        self.score = Histogram(
            "turnwatch_session_score",
            "Graded session metrics (0..1), by service and metric.",
            ["service", "metric"],
            buckets=SCORE_BUCKETS,
            registry=registry,
        )
        self.score_squares = Counter(
            "turnwatch_session_score_squares_total",
            "Sum of squared graded scores, by service and metric: with the histogram's sum and "
            "count, the variance the drift rules compute across exporter replicas.",
            ["service", "metric"],
            registry=registry,
        )
        self.metric_unscored = Counter(
            "turnwatch_metric_unscored_total",
            "Graded metrics not scored (never counted as 0), by reason code.",
            ["service", "metric", "reason"],
            registry=registry,
        )
        self.check_results = Counter(
            "turnwatch_check_results_total",
            "Deterministic check results, by status (passed, failed, unscored).",
            ["service", "check", "status"],
            registry=registry,
        )
        self.check_unscored = Counter(
            "turnwatch_check_unscored_total",
            "Checks that could not be evaluated, by reason code.",
            ["service", "check", "reason"],
            registry=registry,
        )
        self.findings = Counter(
            "turnwatch_check_findings_total",
            "Findings of deterministic checks, by check and severity.",
            ["service", "check", "severity"],
            registry=registry,
        )
        self.critical_failures = Counter(
            "turnwatch_critical_failures_total",
            "Critical failures (never averaged into quality scores), by check.",
            ["service", "check"],
            registry=registry,
        )
        self.critical_sessions = Counter(
            "turnwatch_sessions_with_critical_failure_total",
            "Session revisions with at least one critical failure.",
            ["service"],
            registry=registry,
        )
        self.joint_success = Counter(
            "turnwatch_joint_success_total",
            "Joint success of session revisions, by outcome (success, failure, unscored).",
            ["service", "outcome"],
            registry=registry,
        )
        self.tokens = Counter(
            "turnwatch_session_tokens_total",
            "Chatbot model tokens of scored sessions, by direction (input, output).",
            ["service", "direction"],
            registry=registry,
        )
        self.cost = Counter(
            "turnwatch_session_cost_usd_total",
            "Chatbot model cost of scored sessions (contract price table), in US dollars.",
            ["service"],
            registry=registry,
        )
        self.session_latency = Histogram(
            "turnwatch_session_latency_seconds",
            "Model-call latency plus tool durations of one session.",
            ["service"],
            buckets=SESSION_LATENCY_BUCKETS,
            registry=registry,
        )
        self.end_to_end = Histogram(
            "turnwatch_end_to_end_latency_seconds",
            "From a session's last span to its score exported on /metrics.",
            buckets=END_TO_END_BUCKETS,
            registry=registry,
        )
        self.export_delay = Histogram(
            "turnwatch_score_export_delay_seconds",
            "From a score record's creation (scored_at) to its export on /metrics.",
            buckets=EXPORT_DELAY_BUCKETS,
            registry=registry,
        )
        self.last_exported = Gauge(
            "turnwatch_score_last_exported_timestamp_seconds",
            "Unix time of the last exported score record (0 = none yet; for staleness alerts).",
            registry=registry,
        )
        self.drift_mean_shift = Gauge(
            "turnwatch_quality_drift_mean_shift",
            "Recent mean minus baseline mean, in baseline standard deviations (NaN below the "
            "traffic guard).",
            ["service", "metric"],
            registry=registry,
        )
        self.drift_psi = Gauge(
            "turnwatch_quality_drift_psi",
            "Population stability index of recent scores against the baseline (NaN below the "
            "traffic guard).",
            ["service", "metric"],
            registry=registry,
        )
        self.drift_window = Gauge(
            "turnwatch_quality_drift_window_scores",
            "Scores held in a drift window, by window (recent, baseline).",
            ["service", "metric", "window"],
            registry=registry,
        )
        # Pre-initialise the fixed-set series, so rates start from 0 instead of being absent.
        for outcome in RECORD_OUTCOMES:
            self.records.labels(outcome)
        for label in ("service", "metric", "check", "judge", "model", "reason"):
            self.label_overflow.labels(label)
