"""The gate's rules, each a verdict with its numbers (`policy.py` says what they are).

A rule is `pass`, `regression`, `inconclusive` (the sample is too small, or the interval
straddles the threshold), `skipped` (nothing to judge: no paired case in a slice, a check
that scored no run) or `reported` (no budget set: shown, never deciding).
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum

from pydantic import Field
from turnwatch.exporters.gate.evidence import CaseEvidence
from turnwatch.exporters.gate.policy import GatePolicy
from turnwatch.exporters.gate.sample import Sample, Statistic
from turnwatch.exporters.gate.stats import Interval, p95

from turnwatch.schema import WireModel


class Verdict(StrEnum):
    PASS = "pass"
    REGRESSION = "regression"
    INCONCLUSIVE = "inconclusive"
    SKIPPED = "skipped"
    REPORTED = "reported"


class RuleResult(WireModel):
    rule: str
    slice: str | None = None
    verdict: Verdict
    cases: int = Field(description="Paired cases (or sessions per side) the rule looked at.")
    baseline: float | None = None
    candidate: float | None = None
    difference: Interval | None = Field(
        default=None, description="candidate - baseline, with its bootstrap interval."
    )
    candidate_interval: Interval | None = None
    threshold: float | None = None
    detectable: float | None = Field(
        default=None, description="Smallest drop this sample detects at the policy's power."
    )
    needed: int | None = Field(default=None, description="Cases needed to detect the drop asked.")
    reason: str


def joint(cases: Sequence[CaseEvidence]) -> float | None:
    values = [case.joint for case in cases if case.joint is not None]
    return sum(values) / len(values) if values else None


def _joint_value(case: CaseEvidence) -> float:
    return case.joint if case.joint is not None else 0.0


def critical_rule(
    sample: Sample, policy: GatePolicy, candidate: Sequence[CaseEvidence]
) -> RuleResult:
    """Zero tolerance counts every candidate case, paired with the baseline or not."""
    found = sum(case.critical for case in candidate)
    before = sum(case.critical for case in sample.baseline)
    allowed = policy.critical.max_failures
    verdict = Verdict.REGRESSION if found > allowed else Verdict.PASS
    return RuleResult(
        rule="critical_failures",
        verdict=verdict,
        cases=sample.size,
        baseline=before,
        candidate=found,
        threshold=allowed,
        reason=f"{found} critical failure(s) on the candidate, {allowed} allowed",
    )


def joint_rule(sample: Sample, policy: GatePolicy, slice_name: str | None = None) -> RuleResult:
    rule = policy.joint_success
    effect = rule.min_detectable_drop if slice_name is None else rule.slice_min_detectable_drop
    scored = sample.only(lambda case: case.joint is not None)
    name = "joint_success"
    difference = scored.difference(joint) if scored.size else None
    if difference is None:
        return RuleResult(
            rule=name,
            slice=slice_name,
            verdict=Verdict.SKIPPED,
            cases=0,
            reason="no case with a scored joint success on both sides",
        )
    planned = scored.power(_joint_value, effect)
    if difference.high < -rule.tolerance:
        verdict = Verdict.REGRESSION
        reason = f"dropped by {-difference.estimate:.3f}; the whole interval is a drop"
    elif scored.size >= planned.needed and difference.low >= -effect:
        verdict = Verdict.PASS
        reason = f"no drop of {effect:.2f} or more (the sample detects {planned.detectable:.3f})"
    elif scored.size < planned.needed:
        verdict = Verdict.INCONCLUSIVE
        reason = f"{scored.size} case(s); {planned.needed} needed to detect a {effect:.2f} drop"
    else:
        verdict = Verdict.INCONCLUSIVE
        reason = f"the interval reaches a drop of {-difference.low:.3f} (more than {effect:.2f})"
    return RuleResult(
        rule=name,
        slice=slice_name,
        verdict=verdict,
        cases=scored.size,
        baseline=joint(scored.baseline),
        candidate=joint(scored.candidate),
        difference=difference,
        threshold=-rule.tolerance,
        detectable=planned.detectable,
        needed=planned.needed,
        reason=reason,
    )


def rate_rule(sample: Sample, check: str, minimum: float) -> RuleResult:
    def rate(cases: Sequence[CaseEvidence]) -> float | None:
        scored = sum(case.checks[check].scored for case in cases)
        return sum(case.checks[check].passed for case in cases) / scored if scored else None

    judged = sample.only(lambda case: case.checks[check].scored > 0)
    return _threshold_rule(judged, f"rate:{check}", rate, minimum, f"{check}'s pass rate", True)


def latency_rule(sample: Sample, budget: float | None) -> RuleResult:
    def latency(cases: Sequence[CaseEvidence]) -> float | None:
        return p95([value for case in cases for value in case.latencies_ms])

    return _threshold_rule(sample, "p95_latency_ms", latency, budget, "p95 session latency")


def cost_rule(sample: Sample, budget: float | None) -> RuleResult:
    def cost(cases: Sequence[CaseEvidence]) -> float | None:
        costs = [value for case in cases for value in case.costs_usd]
        successes = sum(case.successes for case in cases)
        if not successes or any(value is None for value in costs):
            return None
        return sum(value for value in costs if value is not None) / successes

    what = "cost per successful session"
    return _threshold_rule(sample, "cost_per_success_usd", cost, budget, what)


def _threshold_rule(
    sample: Sample,
    name: str,
    statistic: Statistic,
    threshold: float | None,
    what: str,
    minimum: bool = False,
) -> RuleResult:
    """The candidate's statistic against a threshold (a minimum, else a budget), decided only
    when its whole interval lies on one side."""
    observed = sample.candidate_interval(statistic) if sample.size else None
    if observed is None:
        decided = threshold is not None and not minimum
        return RuleResult(
            rule=name,
            verdict=Verdict.INCONCLUSIVE if decided else Verdict.SKIPPED,
            cases=sample.size,
            threshold=threshold,
            reason=f"{what} not measured (nothing judged, no price or no success)",
        )
    sign = 1 if minimum else -1  # how far on the good side of the threshold
    if threshold is None:
        verdict, reason = Verdict.REPORTED, "no budget set"
    elif sign * (observed.high - threshold) < 0 and sign * (observed.low - threshold) < 0:
        verdict, reason = Verdict.REGRESSION, f"past {threshold:g} with its whole interval"
    elif sign * (observed.high - threshold) >= 0 and sign * (observed.low - threshold) >= 0:
        verdict, reason = Verdict.PASS, f"within {threshold:g} with its whole interval"
    else:
        verdict, reason = Verdict.INCONCLUSIVE, f"the interval straddles {threshold:g}"
    return RuleResult(
        rule=name,
        verdict=verdict,
        cases=sample.size,
        baseline=statistic(sample.baseline),
        candidate=observed.estimate,
        difference=sample.difference(statistic),
        candidate_interval=observed,
        threshold=threshold,
        reason=reason,
    )


def overall(rules: list[RuleResult]) -> Verdict:
    """Regression when any rule regressed, else inconclusive when any is, else pass."""
    verdicts = {rule.verdict for rule in rules}
    return next(
        (v for v in (Verdict.REGRESSION, Verdict.INCONCLUSIVE) if v in verdicts), Verdict.PASS
    )


def all_rules(
    sample: Sample, policy: GatePolicy, candidate: Sequence[CaseEvidence] | None = None
) -> list[RuleResult]:
    """Every rule; `candidate`: all the candidate's cases when the sample pairs only some."""
    everything = sample.candidate if candidate is None else candidate
    results = [critical_rule(sample, policy, everything), joint_rule(sample, policy)]
    for slice_name in policy.joint_success.critical_slices:
        within = sample.only(lambda case, name=slice_name: name in case.slices)
        if within.size:
            results.append(joint_rule(within, policy, slice_name))
    results += [rate_rule(sample, check, minimum) for check, minimum in policy.rates.items()]
    results.append(latency_rule(sample, policy.p95_latency_ms))
    results.append(cost_rule(sample, policy.cost_per_success_usd))
    return results
