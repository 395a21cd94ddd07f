"""The gate's report: every rule's verdict with its numbers, the changed failures for review,
and the exit code (0 pass, 1 regression, 2 inconclusive), as a table, JSON or Markdown."""

from __future__ import annotations

from typing import NamedTuple

from pydantic import Field
from turnwatch.exporters.gate.evidence import ReleaseEvidence, evidence_of, session_evidence
from turnwatch.exporters.gate.policy import GatePolicy
from turnwatch.exporters.gate.rules import RuleResult, Verdict, all_rules, overall
from turnwatch.exporters.gate.sample import Sample
from turnwatch.exporters.gate.stats import Interval
from turnwatch.exporters.regressions.results import ReplayFile, summarise

from turnwatch.schema import WireModel
from turnwatch.scores import ScoreRecord

EXIT_CODES = {Verdict.PASS: 0, Verdict.REGRESSION: 1, Verdict.INCONCLUSIVE: 2}


class ChangedCase(WireModel):
    case_id: str
    slices: list[str]
    failing: list[str] = Field(description="What fails on the candidate (fixed: on the baseline).")


class ChangedFailures(WireModel):
    new: list[ChangedCase] = Field(default_factory=list)
    fixed: list[ChangedCase] = Field(default_factory=list)
    still_failing: list[ChangedCase] = Field(default_factory=list)


class ReleaseSummary(WireModel):
    release: str
    cases: int
    runs: int
    pass_hat_k: dict[int, float | None]
    simulator_runs: int = Field(description="Runs left out: failures the simulator may cause.")
    error_runs: int = Field(description="Runs left out: the target could not be used.")


class GateReport(WireModel):
    verdict: Verdict
    exit_code: int
    paired: bool
    baseline: ReleaseSummary
    candidate: ReleaseSummary
    rules: list[RuleResult]
    changed: ChangedFailures
    unpaired_cases: list[str] = Field(description="Cases replayed on one side only (left out).")


class Side(NamedTuple):
    """One release's evidence and what the report says about where it came from."""

    evidence: ReleaseEvidence
    summary: ReleaseSummary


def replay_side(replay: ReplayFile, policy: GatePolicy, label: str) -> Side:
    evidence = evidence_of(replay, list(policy.rates), label)
    return Side(
        evidence,
        ReleaseSummary(
            release=evidence.release,
            cases=len(evidence.cases),
            runs=len(replay.runs),
            pass_hat_k=summarise(replay.runs, replay.repeat).pass_hat_k,
            simulator_runs=sum(evidence.simulator_runs.values()),
            error_runs=sum(evidence.error_runs.values()),
        ),
    )


def sessions_side(records: list[ScoreRecord], policy: GatePolicy, label: str) -> Side:
    """Production sessions (one run each, no simulator) as a side."""
    checks = list(policy.rates)
    cases = {record.session_id: session_evidence(record, checks) for record in records}
    summary = ReleaseSummary(
        release=label,
        cases=len(cases),
        runs=len(cases),
        pass_hat_k={},
        simulator_runs=0,
        error_runs=0,
    )
    return Side(ReleaseEvidence(release=label, cases=cases), summary)


def gate(baseline: Side, candidate: Side, policy: GatePolicy) -> GateReport:
    before, after = baseline.evidence, candidate.evidence
    sample = Sample.of(before, after, policy)
    rules = all_rules(sample, policy, list(after.cases.values()))
    verdict = overall(rules)
    unpaired = sorted(before.cases.keys() ^ after.cases.keys()) if sample.paired else []
    return GateReport(
        verdict=verdict,
        exit_code=EXIT_CODES[verdict],
        paired=sample.paired,
        baseline=baseline.summary,
        candidate=candidate.summary,
        rules=rules,
        changed=_changed(before, after),
        unpaired_cases=unpaired,
    )


def _changed(before: ReleaseEvidence, after: ReleaseEvidence) -> ChangedFailures:
    changed = ChangedFailures()
    for case_id in sorted(before.cases.keys() & after.cases.keys()):
        base, cand = before.cases[case_id], after.cases[case_id]
        if not (base.failing or cand.failing):
            continue
        shown = cand if cand.failing else base
        item = ChangedCase(case_id=case_id, slices=shown.slices, failing=shown.failing)
        if not base.failing:
            changed.new.append(item)
        elif not cand.failing:
            changed.fixed.append(item)
        else:
            changed.still_failing.append(item)
    return changed


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _interval(value: Interval | None) -> str:
    if value is None:
        return "-"
    return f"{value.estimate:+.3f} [{value.low:+.3f}, {value.high:+.3f}]"


def _rows(report: GateReport) -> list[list[str]]:
    return [
        [
            rule.rule + (f" [{rule.slice}]" if rule.slice else ""),
            rule.verdict.value.upper(),
            str(rule.cases),
            _number(rule.baseline),
            _number(rule.candidate),
            _interval(rule.difference),
            "-" if rule.needed is None else str(rule.needed),
            rule.reason,
        ]
        for rule in report.rules
    ]


HEADER = ["rule", "verdict", "cases", "baseline", "candidate", "difference (95%)", "needed", "why"]


def _headline(report: GateReport) -> str:
    pairing = "paired by case" if report.paired else "unpaired (sessions)"
    return (
        f"gate: {report.verdict.value.upper()} (exit {report.exit_code}): "
        f"{report.candidate.release} against {report.baseline.release}, {pairing}"
    )


def table(report: GateReport) -> str:
    rows = [HEADER, *_rows(report)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(HEADER) - 1)]
    lines = [_headline(report)]
    for row in rows:
        cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=False)]
        lines.append("  ".join([*cells, row[-1]]))
    lines += _changed_lines(report, "")
    return "\n".join(lines)


def markdown(report: GateReport) -> str:
    def cells(row: list[str]) -> str:
        return "| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |"

    lines = [f"## {_headline(report)}", "", cells(HEADER), cells(["---"] * len(HEADER))]
    lines += [cells(row) for row in _rows(report)]
    lines += ["", *_pass_hat_k(report)]
    changed = _changed_lines(report, "- ")
    if changed:
        lines += ["", "### Changed failures", "", *changed]
    return "\n".join(lines) + "\n"


def _pass_hat_k(report: GateReport) -> list[str]:
    lines = []
    for side in (report.baseline, report.candidate):
        rates = "".join(f", pass^{k} {_number(v)}" for k, v in side.pass_hat_k.items())
        left = f"; left out: {side.simulator_runs} simulator, {side.error_runs} error run(s)"
        lines.append(f"{side.release}: {side.cases} case(s), {side.runs} run(s){rates}{left}")
    return lines


def _changed_lines(report: GateReport, bullet: str) -> list[str]:
    lines = []
    for label, items in (
        ("new", report.changed.new),
        ("fixed", report.changed.fixed),
        ("still failing", report.changed.still_failing),
    ):
        for item in items:
            where = f" [{', '.join(item.slices)}]" if item.slices else ""
            lines.append(f"{bullet}{label}: {item.case_id}{where}: {', '.join(item.failing)}")
    return lines
