"""Online canary verdicts: the exporter compares two live versions of a service with the gate's
rules and exports the verdict, which the Argo Rollouts AnalysisTemplate in deploy/argo reads
from a real Prometheus scraping turnwatch."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from prometheus_client import CollectorRegistry
from turnwatch.exporters.config import ExporterConfig
from turnwatch.exporters.gate.canary import CanaryConfig, CanaryGate
from turnwatch.exporters.score_exporter import ScoreExporter

from tests.conftest import Running
from tests.test_exporter import sample, score_record
from tests.test_prometheus_server import prometheus, query, turnwatch  # noqa: F401 (fixtures)
from tests.waiting import eventually
from turnwatch.scores import ScoreRecord

TEMPLATE = Path(__file__).resolve().parent.parent / "deploy" / "argo" / "analysis-template.yaml"


def record(number: int, version: str | None, joint: bool = True, revision: int = 1) -> ScoreRecord:
    built = score_record(f"s-{version}-{number}", revision=revision, joint=joint)
    return built.model_copy(update={"service_version": version})


def exporter(registry: CollectorRegistry, **canary: object) -> ScoreExporter:
    config = {"enabled": True, "evaluate_every_seconds": 3600, **canary}
    # Named, as a deployment names its services: otherwise a service takes a label slot only
    # after exporter.service_min_sessions scored sessions and the first ones count as `other`.
    return ScoreExporter(
        registry,
        ExporterConfig(services=["support-bot"], canary=CanaryConfig.model_validate(config)),
    )


def verdict(registry: CollectorRegistry, rule: str = "overall") -> float | None:
    labels = {"service": "support-bot", "rule": rule}
    return registry.get_sample_value("turnwatch_release_gate_verdict", labels)


def test_a_candidate_that_fails_its_sessions_is_a_regression():
    registry = CollectorRegistry()
    scores = exporter(registry)
    for number in range(60):
        scores.observe(record(number, "1.3"))
    for number in range(60):
        scores.observe(record(number, "1.4", joint=number % 2 == 0))
    rules = scores.canary.evaluate()["support-bot"]
    [joint] = [rule for rule in rules if rule.rule == "joint_success"]
    assert joint.difference.estimate == -0.5 and joint.difference.high < 0
    assert verdict(registry) == 1 and verdict(registry, "joint_success") == 1
    assert verdict(registry, "critical_failures") == 0
    bounds = {
        bound: registry.get_sample_value(
            "turnwatch_release_gate_difference",
            {"service": "support-bot", "rule": "joint_success", "bound": bound},
        )
        for bound in ("estimate", "low", "high")
    }
    assert bounds["estimate"] == -0.5 and bounds["low"] <= -0.5 <= bounds["high"] < 0
    sides = {"side": "candidate", "service": "support-bot"}
    assert registry.get_sample_value("turnwatch_release_gate_sessions", sides) == 60


def test_identical_versions_pass_with_enough_sessions_and_are_inconclusive_before():
    registry = CollectorRegistry()
    scores = exporter(registry)
    for number in range(150):
        scores.observe(record(number, "1.3"))
    for number in range(100):
        scores.observe(record(number, "1.4"))
    scores.canary.evaluate()
    assert verdict(registry) == 2  # 100 sessions cannot show a 5-point drop
    for number in range(100, 150):
        scores.observe(record(number, "1.4"))
    # A new revision of a session replaces the old one: still 150 sessions, not 151.
    scores.observe(record(0, "1.4", revision=2))
    scores.canary.evaluate()
    assert verdict(registry) == 0
    sides = {"side": "candidate", "service": "support-bot"}
    assert registry.get_sample_value("turnwatch_release_gate_sessions", sides) == 150


def test_versions_and_windows_are_bounded_and_chosen_as_configured():
    registry = CollectorRegistry()
    assert CanaryGate(CollectorRegistry(), CanaryConfig()).evaluate() == {}
    scores = exporter(registry)
    gate = scores.canary
    for number in range(30):
        scores.observe(record(number, "1.2"))
    scores.observe(record(0, None))  # no service.version: not compared
    gate.evaluate()
    assert sample(registry, "turnwatch_release_gate_evaluations_total", outcome="no_pair") == 1
    for version in ("1.3", "1.4"):
        for number in range(5):
            scores.observe(record(number, version, joint=version == "1.3"))
    assert list(gate.windows["support-bot"]) == ["1.2", "1.3", "1.4"]
    small = CanaryGate(CollectorRegistry(), CanaryConfig(window_sessions=10, max_versions=2))
    for version in ("1.2", "1.3", "1.4"):
        for number in range(12):
            small.observe("support-bot", record(number, version))
    assert list(small.windows["support-bot"]) == ["1.3", "1.4"]
    assert [len(window) for window in small.windows["support-bot"].values()] == [10, 10]
    # The candidate is the version that appeared last, the baseline the biggest of the others.
    assert gate._pair("support-bot", gate.windows["support-bot"], gate._first_seen) == (
        "1.2",
        "1.4",
    )
    pinned = CanaryGate(CollectorRegistry(), CanaryConfig(baseline_version="1.3"))
    pinned.windows, pinned._first_seen = gate.windows, gate._first_seen
    assert pinned._pair("support-bot", gate.windows["support-bot"], gate._first_seen) == (
        "1.3",
        "1.4",
    )
    # A configured version not seen yet: nothing is compared, and that is counted.
    own = CollectorRegistry()
    waiting = CanaryGate(own, CanaryConfig(candidate_version="2.0"))
    waiting.windows, waiting._first_seen = gate.windows, gate._first_seen
    assert waiting.evaluate() == {}
    assert sample(own, "turnwatch_release_gate_evaluations_total", outcome="no_pair") == 1


def test_evaluation_runs_on_the_worker_when_due():
    registry = CollectorRegistry()
    scores = exporter(registry, evaluate_every_seconds=0)
    for number in range(20):
        scores.observe(record(number, "1.3"))
        scores.observe(record(number, "1.4", joint=False))
    scores.canary.wait()
    scores.canary.evaluate()  # the last record's evaluation may have been skipped as busy
    assert verdict(registry) == 1
    evaluated = sample(registry, "turnwatch_release_gate_evaluations_total", outcome="evaluated")
    assert 1 < evaluated <= 40


def argo_outcome(metric: dict, value: float) -> str:
    """What Argo Rollouts makes of one measurement, for the `result[0] == N` conditions used."""

    def holds(condition: str) -> bool:
        match = re.fullmatch(r"result\[0\] == (\d+)", condition)
        assert match, condition
        return value == float(match.group(1))

    if holds(metric["failureCondition"]):
        return "Failed"
    if holds(metric["successCondition"]):
        return "Successful"
    return "Inconclusive"


@pytest.mark.slow
def test_the_argo_analysis_query_reads_the_verdict_from_prometheus(
    turnwatch: Running,  # noqa: F811
    prometheus: str,  # noqa: F811
):
    template = yaml.safe_load(TEMPLATE.read_text())
    assert (template["apiVersion"], template["kind"]) == (
        "argoproj.io/v1alpha1",
        "AnalysisTemplate",
    )
    [metric] = template["spec"]["metrics"]
    expression = metric["provider"]["prometheus"]["query"].replace(
        "{{args.service}}", "support-bot"
    )
    scores = exporter(turnwatch.service.registry)
    for number in range(60):
        scores.observe(record(number, "1.3"))
        scores.observe(record(number, "1.4", joint=number % 3 != 0))
    scores.canary.evaluate()
    [result] = eventually(
        lambda: query(prometheus, expression),
        timeout=30,
        interval=0.25,
        what="the release gate's verdict in Prometheus",
    )
    assert argo_outcome(metric, float(result["value"][1])) == "Failed"
    # The next rollout: 1.5 appears and is compared with 1.3; 20 sessions decide nothing yet.
    for number in range(20):
        scores.observe(record(number, "1.5"))
    scores.canary.evaluate()
    assert verdict(turnwatch.service.registry) == 2
    eventually(
        lambda: query(prometheus, expression)[0]["value"][1],
        lambda value: value == "2",
        timeout=30,
        interval=0.25,
        what="the updated verdict",
    )
    assert argo_outcome(metric, 2.0) == "Inconclusive" and argo_outcome(metric, 0.0) == "Successful"
