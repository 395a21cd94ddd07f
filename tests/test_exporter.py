"""The score exporter: metrics per record, idempotence, bounded labels, drift gauges."""

from __future__ import annotations

import math
import random
from datetime import UTC, datetime, timedelta

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from pydantic import ValidationError
from turnwatch.exporters.config import ExporterConfig
from turnwatch.exporters.labels import OTHER, LabelLimiter, reason_code
from turnwatch.exporters.score_exporter import ScoreExporter

from tests.test_scorers_builders import session as built_session
from tests.test_scorers_builders import user
from turnwatch.bus.records import INCIDENTS, SCORES
from turnwatch.drift import SCORE_BUCKETS, DriftConfig, DriftTracker
from turnwatch.incidents import Incident
from turnwatch.revisions import SeenRevisions
from turnwatch.scores import (
    BudgetUsage,
    CheckResult,
    Finding,
    JointSuccess,
    Score,
    ScoreRecord,
    Severity,
    Status,
)


def score_record(
    session_id: str = "s-1",
    revision: int = 1,
    service: str = "support-bot",
    scores: dict[str, float | None] | None = None,
    critical: str | None = None,
    joint: bool | None = True,
    judge: str = "heuristic",
    cost_usd: float | None = 0.002,
) -> ScoreRecord:
    metrics = [
        Score(
            name=name,
            value=value,
            unscored_reason=None if value is not None else "judge budget exhausted: 0 left",
            metadata={"judge": judge, "model": "none", "cost_usd": 0.001, "prompt_tokens": 100},
        )
        for name, value in (scores if scores is not None else {"turn_relevancy": 0.8}).items()
    ]
    results = [CheckResult(check="tool_schema", status=Status.PASSED)]
    failures: list[Finding] = []
    if critical is not None:
        finding = Finding(
            check=critical, turn_index=2, severity=Severity.CRITICAL, explanation="tool x"
        )
        results.append(CheckResult(check=critical, status=Status.FAILED, findings=[finding]))
        failures.append(finding)
    results.append(
        CheckResult(
            check="success_condition",
            status=Status.UNSCORED,
            unscored_reason="no contract for service 'support-bot'",
        )
    )
    return ScoreRecord(
        session_id=session_id,
        revision=revision,
        service=service,
        contract=None,
        scored_at=datetime.now(UTC),
        trajectory_level=results,
        critical_failures=failures,
        joint_success=JointSuccess(value=joint, conditions={}),
        budgets=BudgetUsage(
            turns=4,
            user_turns=2,
            tool_calls=1,
            latency_ms=1500.0,
            max_turn_latency_ms=900.0,
            input_tokens=300,
            output_tokens=120,
            cost_usd=cost_usd,
        ),
        metrics=metrics,
    )


# The service these records come from is named on /metrics from its first session, as an
# allow-list does; without one a name needs service_min_sessions sessions (test_service_labels_*).
SUPPORT_BOT = ExporterConfig(services=["support-bot"])


def sample(registry: CollectorRegistry, name: str, **labels: str) -> float:
    value = registry.get_sample_value(name, labels)
    return 0.0 if value is None else value


def test_one_record_updates_every_family():
    registry = CollectorRegistry()
    exporter = ScoreExporter(registry, SUPPORT_BOT)
    record = score_record(scores={"turn_relevancy": 0.75, "role_adherence": None}, critical="fa")
    assert exporter.observe(record, session_ended_at=record.scored_at - timedelta(seconds=61))
    svc = {"service": "support-bot"}
    assert sample(registry, "turnwatch_sessions_scored_total", **svc) == 1
    assert sample(registry, "turnwatch_session_score_count", **svc, metric="turn_relevancy") == 1
    assert sample(registry, "turnwatch_session_score_sum", **svc, metric="turn_relevancy") == 0.75
    # 0.75 lands in le=0.8 but not le=0.7: explicit [0, 1] buckets, not latency buckets.
    bucket = "turnwatch_session_score_bucket"
    assert sample(registry, bucket, **svc, metric="turn_relevancy", le="0.7") == 0
    assert sample(registry, bucket, **svc, metric="turn_relevancy", le="0.8") == 1
    # Unscored is counted with a reason code, and never observed as a score of 0.
    assert sample(registry, "turnwatch_session_score_count", **svc, metric="role_adherence") == 0
    unscored = dict(svc, metric="role_adherence", reason="judge_budget_exhausted")
    assert sample(registry, "turnwatch_metric_unscored_total", **unscored) == 1
    assert sample(
        registry, "turnwatch_check_findings_total", **svc, check="fa", severity="critical"
    )
    assert sample(registry, "turnwatch_critical_failures_total", **svc, check="fa") == 1
    assert sample(registry, "turnwatch_sessions_with_critical_failure_total", **svc) == 1
    assert sample(registry, "turnwatch_joint_success_total", **svc, outcome="success") == 1
    assert sample(registry, "turnwatch_joint_success_total", **svc, outcome="failure") == 0
    check = dict(svc, check="success_condition")
    assert sample(registry, "turnwatch_check_results_total", **check, status="unscored") == 1
    reason = "no_contract_for_service"
    assert sample(registry, "turnwatch_check_unscored_total", **check, reason=reason) == 1
    assert sample(registry, "turnwatch_session_tokens_total", **svc, direction="input") == 300
    assert sample(registry, "turnwatch_session_cost_usd_total", **svc) == pytest.approx(0.002)
    assert sample(registry, "turnwatch_session_latency_seconds_sum", **svc) == 1.5
    e2e = sample(registry, "turnwatch_end_to_end_latency_seconds_sum")
    assert 61 <= e2e < 70
    assert sample(registry, "turnwatch_score_export_delay_seconds_count") == 1
    assert sample(registry, "turnwatch_score_last_exported_timestamp_seconds") > 0


def test_a_redelivered_revision_is_counted_once():
    registry = CollectorRegistry()
    exporter = ScoreExporter(registry, SUPPORT_BOT)
    assert exporter.observe(score_record("s-1", 1))
    assert not exporter.observe(score_record("s-1", 1))
    assert exporter.observe(score_record("s-1", 2))  # a new revision is a new record
    assert sample(registry, "turnwatch_sessions_scored_total", service="support-bot") == 2
    assert sample(registry, "turnwatch_exporter_records_total", outcome="duplicate") == 1


def test_revision_memory_is_bounded():
    log = SeenRevisions(max_entries=100)
    for number in range(10_000):
        assert log.first_time(f"session-{number}", 1)
    assert len(log) == 100
    assert not log.first_time("session-9999", 1)


def test_service_labels_overflow_to_other():
    registry = CollectorRegistry()
    exporter = ScoreExporter(registry, ExporterConfig(max_services=3, service_min_sessions=1))
    for number in range(50):
        exporter.observe(score_record(f"s-{number}", service=f"svc-{number}"))
    text = generate_latest(registry).decode()
    services = {
        line.split('service="')[1].split('"')[0]
        for line in text.splitlines()
        if 'service="' in line
    }
    assert services == {"svc-0", "svc-1", "svc-2", OTHER}
    assert sample(registry, "turnwatch_sessions_scored_total", service=OTHER) == 47
    assert sample(registry, "turnwatch_exporter_label_overflow_total", label="service") >= 47


def test_allow_list_admits_only_listed_values():
    limiter = LabelLimiter("service", 100, allow=["a", "b"])
    assert [limiter(v) for v in ("a", "c", "b", "")] == ["a", OTHER, "b", "none"]
    assert LabelLimiter("service", 100)("x" * 65) == OTHER  # an id-sized value is not a name


def test_reason_codes_drop_instance_details():
    assert reason_code("no contract for service 'billing-7'") == "no_contract_for_service"
    assert reason_code("check raised KeyError") == "check_raised_keyerror"
    assert reason_code("judge timeout: 30s") == "judge_timeout"
    assert reason_code("42 retries") == "unspecified"
    assert reason_code(None) == "unspecified"


def test_score_outside_zero_one_is_clamped_into_the_histogram():
    registry = CollectorRegistry()
    ScoreExporter(registry, SUPPORT_BOT).observe(score_record(scores={"m": 7.0}))
    assert sample(registry, "turnwatch_session_score_sum", service="support-bot", metric="m") == 1


async def test_bus_handler_counts_score_records_not_the_incidents_repeating_them():
    registry = CollectorRegistry()
    exporter = ScoreExporter(registry, SUPPORT_BOT)
    record = score_record()
    assert await exporter.handle(SCORES, record) == ()
    later = score_record(session_id="s-2")
    incident = Incident.of(built_session(user("hi"), session_id="s-2"), later, ["critical_failure"])
    assert await exporter.handle(INCIDENTS, incident) == ()
    assert sample(registry, "turnwatch_exporter_records_total", outcome="exported") == 1
    assert sample(registry, "turnwatch_sessions_scored_total", service="support-bot") == 1


def _tracker(**config: int | float) -> DriftTracker:
    values = {"recent_window": 100, "baseline_window": 400, "min_recent": 50, "min_baseline": 200}
    values.update(config)
    return DriftTracker(DriftConfig(**values), SCORE_BUCKETS)


def test_drift_is_nan_below_the_traffic_guard():
    tracker = _tracker()
    reading = None
    for _ in range(249):  # 100 recent + 149 baseline: the baseline guard (200) is not met
        reading = tracker.add(0.8)
    assert reading is not None and math.isnan(reading.mean_shift) and math.isnan(reading.psi)
    assert (reading.recent, reading.baseline) == (100, 149)


def test_drift_stays_small_on_a_stable_stream_and_flags_a_drop():
    rng = random.Random(7)
    tracker = _tracker()
    for _ in range(500):
        stable = tracker.add(min(max(rng.gauss(0.8, 0.05), 0.0), 1.0))
    assert abs(stable.mean_shift) < 1 and stable.psi < 0.1
    for _ in range(100):
        dropped = tracker.add(min(max(rng.gauss(0.55, 0.05), 0.0), 1.0))
    assert dropped.mean_shift < -3
    assert dropped.psi > 0.25
    # The drop has not leaked into the baseline: it is what the recent window is compared with.
    assert tracker.baseline.mean() == pytest.approx(0.8, abs=0.02)


def test_drift_gauges_are_exported_per_service_and_metric():
    registry = CollectorRegistry()
    config = ExporterConfig(
        services=["support-bot"],
        drift=DriftConfig(recent_window=10, baseline_window=20, min_recent=5, min_baseline=10),
    )
    exporter = ScoreExporter(registry, config)
    for number in range(40):
        value = 0.9 if number < 30 else 0.2
        exporter.observe(score_record(f"s-{number}", scores={"relevancy": value}))
    labels = {"service": "support-bot", "metric": "relevancy"}
    assert sample(registry, "turnwatch_quality_drift_mean_shift", **labels) < -3
    assert sample(registry, "turnwatch_quality_drift_psi", **labels) > 0.25
    window = dict(labels, window="baseline")
    assert sample(registry, "turnwatch_quality_drift_window_scores", **window) == 20


def test_squared_scores_are_summed_for_the_drift_rules_variance():
    registry = CollectorRegistry()
    exporter = ScoreExporter(registry, ExporterConfig(services=["support-bot"]))
    for number, value in enumerate((0.5, 0.3, 1.7)):  # 1.7 is clamped to 1 as in the histogram
        exporter.observe(score_record(f"s-{number}", scores={"relevancy": value}))
    exporter.observe(score_record("s-0", scores={"relevancy": 0.5}))  # a redelivery: not again
    labels = {"service": "support-bot", "metric": "relevancy"}
    squares = sample(registry, "turnwatch_session_score_squares_total", **labels)
    assert squares == pytest.approx(0.25 + 0.09 + 1.0)
    assert sample(registry, "turnwatch_session_score_sum", **labels) == pytest.approx(1.8)


def test_drift_windows_resum_without_losing_precision():
    tracker = _tracker(recent_window=10, baseline_window=20, min_recent=5, min_baseline=10)
    for number in range(10_000):
        tracker.add((number % 10) / 10)
    values = list(tracker.baseline.values)
    assert tracker.baseline.mean() == pytest.approx(sum(values) / len(values), abs=1e-12)


def test_config_rejects_a_guard_larger_than_its_window():
    with pytest.raises(ValidationError, match="min_recent"):
        DriftConfig(recent_window=10, min_recent=20)


def test_old_scored_at_gives_export_delay_not_negative():
    registry = CollectorRegistry()
    record = score_record()
    record.scored_at = datetime.now(UTC) + timedelta(seconds=30)  # scorer clock ahead
    ScoreExporter(registry).observe(record)
    assert sample(registry, "turnwatch_score_export_delay_seconds_sum") == 0
