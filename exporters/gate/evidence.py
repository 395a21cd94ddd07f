"""What one replay result file says about a release, case by case.

Only runs that speak about the chatbot count (`ReplayRun.counted`: passed or failed); runs the
simulator may have caused and runs that could not be replayed are listed apart, and a case with
no counted run has no evidence. A case's joint success is the share of its counted runs whose
joint success passed (unscored runs left out), so K repeated runs weigh as one case.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from turnwatch.exporters.regressions.results import ReplayFile, ReplayRun, RunOutcome

from turnwatch.scores import ScoreRecord, Status


@dataclass(frozen=True)
class CheckTally:
    scored: int
    passed: int


@dataclass
class CaseEvidence:
    case_id: str
    slices: list[str]
    runs: int
    joint: float | None
    critical: int
    failing: list[str]
    """What failed in any counted run (recurring, new and critical findings)."""
    checks: dict[str, CheckTally]
    latencies_ms: list[float]
    costs_usd: list[float | None]
    successes: int


@dataclass
class ReleaseEvidence:
    release: str
    cases: dict[str, CaseEvidence]
    simulator_runs: dict[str, int] = field(default_factory=dict)
    error_runs: dict[str, int] = field(default_factory=dict)


def evidence_of(replay: ReplayFile, checks: list[str], label: str) -> ReleaseEvidence:
    evidence = ReleaseEvidence(release=replay.release or label, cases={})
    for case_id, runs in replay.cases().items():
        counted = [run for run in runs if run.counted]
        for outcome, tally in (
            (RunOutcome.SIMULATOR, evidence.simulator_runs),
            (RunOutcome.ERROR, evidence.error_runs),
        ):
            if left_out := sum(run.outcome is outcome for run in runs):
                tally[case_id] = left_out
        if counted:
            evidence.cases[case_id] = _case(case_id, counted, checks)
    return evidence


def _case(case_id: str, runs: list[ReplayRun], checks: list[str]) -> CaseEvidence:
    joint = [run.joint_success for run in runs if run.joint_success is not None]
    records = [run.score for run in runs if run.score is not None]
    failing = sorted(
        {item for run in runs for item in (*run.still_failing, *run.new, *run.critical)}
    )
    return CaseEvidence(
        case_id=case_id,
        slices=runs[0].slices,
        runs=len(runs),
        joint=sum(joint) / len(joint) if joint else None,
        critical=sum(len(run.critical) for run in runs),
        failing=failing,
        checks={name: _tally(records, name) for name in checks},
        latencies_ms=[record.budgets.latency_ms for record in records],
        costs_usd=[record.budgets.cost_usd for record in records],
        successes=sum(run.joint_success is True for run in runs),
    )


def session_evidence(record: ScoreRecord, checks: list[str]) -> CaseEvidence:
    """One production session's score record as evidence (the canary compares sessions)."""
    failing = sorted(result.check for result in record.results() if result.status is Status.FAILED)
    joint = record.joint_success.value
    return CaseEvidence(
        case_id=record.session_id,
        slices=sorted({tag.slice.value for tag in record.slices}),
        runs=1,
        joint=None if joint is None else float(joint),
        critical=len(record.critical_failures),
        failing=failing,
        checks={name: _tally([record], name) for name in checks},
        latencies_ms=[record.budgets.latency_ms],
        costs_usd=[record.budgets.cost_usd],
        successes=int(joint is True),
    )


def _tally(records: list[ScoreRecord], check: str) -> CheckTally:
    scored = passed = 0
    for record in records:
        # A passed result without a value found nothing to check (no failed tool call to
        # recover from): the run says nothing about the rate.
        statuses = {
            result.status
            for result in record.results()
            if result.check == check
            and result.status is not Status.UNSCORED
            and (result.status is Status.FAILED or result.value is not None)
        }
        if statuses:
            scored += 1
            passed += statuses == {Status.PASSED}
    return CheckTally(scored=scored, passed=passed)
