"""A score record in two parts (checks, then judged) and its finite numbers: the model refuses
what JSON cannot carry, the bus tells the parts apart, and the exporter counts each revision's
checks once and its judge metrics once however the parts arrive."""

from __future__ import annotations

import math

import pytest
from prometheus_client import CollectorRegistry
from pydantic import ValidationError
from turnwatch.exporters.score_exporter import ScoreExporter

from tests.test_exporter import SUPPORT_BOT, score_record
from turnwatch.bus.records import SCORES, decode, encode, revision_of
from turnwatch.scores import BudgetUsage, Evidence, Part, Score, ScoreRecord


def part(record: ScoreRecord, which: Part, **update: object) -> ScoreRecord:
    return record.model_copy(update={"part": which, **update})


def checks_and_judged(session_id: str = "s-1") -> tuple[ScoreRecord, ScoreRecord]:
    judged = part(score_record(session_id, scores={"turn_relevancy": 0.8}), Part.JUDGED)
    return part(judged, Part.CHECKS, metrics=[]), judged


def value(registry: CollectorRegistry, name: str, **labels: str) -> float:
    return registry.get_sample_value(name, labels) or 0.0


@pytest.mark.parametrize("number", [math.nan, math.inf, -math.inf])
def test_record_models_refuse_non_finite_numbers(number):
    with pytest.raises(ValidationError, match="finite"):
        Score(name="geval.polite", value=number)
    with pytest.raises(ValidationError, match="finite"):
        Score(name="geval.polite", value=0.5, metadata={"weights": [0.5, number]})
    with pytest.raises(ValidationError, match="finite"):
        Evidence(measured=number)
    budgets = score_record().budgets.model_dump()
    with pytest.raises(ValidationError, match="finite"):
        BudgetUsage.model_validate({**budgets, "latency_ms": number})


def test_a_checks_part_carries_no_judge_metrics():
    with pytest.raises(ValidationError, match="checks part"):
        ScoreRecord.model_validate({**score_record().model_dump(), "part": "checks"})


def test_records_without_a_part_read_as_complete():
    data = score_record().model_dump(mode="json")
    del data["part"]
    assert ScoreRecord.model_validate(data).part is Part.COMPLETE


def test_the_bus_tells_the_parts_of_a_revision_apart():
    checks, judged = checks_and_judged()
    complete = score_record()
    identities = {revision_of(record) for record in (checks, judged, complete)}
    assert identities == {"1:checks", "1:judged", "1"}
    wire = decode(SCORES, encode(judged, 1 << 20), 1 << 20)
    assert wire == judged and wire.part is Part.JUDGED


def test_the_exporter_counts_checks_and_judge_metrics_once_each():
    registry = CollectorRegistry()
    exporter = ScoreExporter(registry, SUPPORT_BOT)
    checks, judged = checks_and_judged()
    assert exporter.observe(checks) and exporter.observe(judged)
    # Redeliveries of either part, and a complete record of the same revision, add nothing.
    assert not exporter.observe(checks) and not exporter.observe(judged)
    assert not exporter.observe(part(judged, Part.COMPLETE))
    assert value(registry, "turnwatch_sessions_scored_total", service="support-bot") == 1
    assert value(registry, "turnwatch_check_results_total", service="support-bot",
                 check="tool_schema", status="passed") == 1  # fmt: skip
    assert value(registry, "turnwatch_session_score_count", service="support-bot",
                 metric="turn_relevancy") == 1  # fmt: skip
    assert value(registry, "turnwatch_exporter_records_total", outcome="exported") == 2
    assert value(registry, "turnwatch_exporter_records_total", outcome="duplicate") == 3


def test_a_complete_record_after_the_checks_part_adds_only_the_judge_metrics():
    registry = CollectorRegistry()
    exporter = ScoreExporter(registry, SUPPORT_BOT)
    checks, judged = checks_and_judged()
    assert exporter.observe(checks)
    assert exporter.observe(part(judged, Part.COMPLETE))
    assert not exporter.observe(judged)
    assert value(registry, "turnwatch_sessions_scored_total", service="support-bot") == 1
    assert value(registry, "turnwatch_session_score_count", service="support-bot",
                 metric="turn_relevancy") == 1  # fmt: skip
    assert value(registry, "turnwatch_joint_success_total", service="support-bot",
                 outcome="success") == 1  # fmt: skip
