"""Replay results: every run of every case, with its transcript and score record, in one file.

`turnwatch regressions replay --repeat K --out FILE` writes a `ReplayFile`: what was replayed
against which target, by which simulated user (kind, version, model, seed, prompt digest), and
one `ReplayRun` per case and repetition holding the replayed session, the score record the same
checks, judge and contract gave it, the findings diff against the recorded failures, where the
simulator was unsure, and how the run is counted:

- `passed`: none of the recorded failures recurs, no critical failure, joint success not failed,
  no new error-level finding;
- `failed`: the chatbot's failure;
- `simulator`: the run failed at or after a turn where the simulated user was unsure or broke a
  rule, so the failure may be the simulator's: reported apart, left out of pass^k;
- `error`: the target could not be used (unreachable, HTTP error, not a chat completion).

pass^k (the tau-bench family's measure) is the chance that k runs of a case all pass, estimated
per case from its n counted runs with c passes as C(c, k) / C(n, k), and averaged over cases.
"""

from __future__ import annotations

from enum import StrEnum
from math import comb
from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationError
from turnwatch.exporters.regressions.model import Timestamp
from turnwatch.exporters.regressions.simulator import SimulatorInfo, SimulatorNote, StopReason

from turnwatch.schema import Session, WireModel, first_problem
from turnwatch.scores import ScoreRecord

REPLAY_FORMAT = 1


class RunOutcome(StrEnum):
    PASSED = "passed"
    FAILED = "failed"
    SIMULATOR = "simulator"
    ERROR = "error"


class ReplayRun(WireModel):
    case_id: str
    repeat: int = Field(ge=0, description="Which of the K runs of the case (0-based).")
    outcome: RunOutcome
    seed: int | None = Field(default=None, description="The simulated user's seed (a model's).")
    slices: list[str] = Field(description="The case's slices (what the gate compares on).")
    fixed: list[str] = Field(default_factory=list)
    still_failing: list[str] = Field(default_factory=list)
    new: list[str] = Field(default_factory=list)
    critical: list[str] = Field(default_factory=list)
    joint_success: bool | None = None
    stop: StopReason | None = Field(default=None, description="Why the simulated user stopped.")
    simulator_notes: list[SimulatorNote] = Field(default_factory=list)
    unrecorded_tools: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    error: str | None = None
    seconds: float = Field(ge=0, description="Wall-clock time of the run, scoring included.")
    judge_calls: int = Field(default=0, ge=0, description="Requests to the judge endpoint.")
    session: Session | None = None
    score: ScoreRecord | None = None

    @property
    def passed(self) -> bool:
        return self.outcome is RunOutcome.PASSED

    @property
    def counted(self) -> bool:
        """Whether the run says something about the chatbot (pass^k counts it)."""
        return self.outcome in (RunOutcome.PASSED, RunOutcome.FAILED)

    def report(self) -> str:
        verdict = {
            RunOutcome.PASSED: "PASS",
            RunOutcome.FAILED: "FAIL",
            RunOutcome.SIMULATOR: "SIM?",
            RunOutcome.ERROR: "FAIL",
        }[self.outcome]
        label = f"{self.case_id}#{self.repeat}"
        if self.error:
            return f"{verdict} {label}: {self.error}"
        joint = {True: "passed", False: "failed", None: "unscored"}[self.joint_success]
        stopped = f", user stopped: {self.stop.value}" if self.stop else ""
        lines = [f"{verdict} {label} (joint success: {joint}{stopped})"]
        lines += [f"  - fixed: {check}" for check in self.fixed]
        lines += [f"  = still failing: {check}" for check in self.still_failing]
        lines += [f"  + new: {item}" for item in self.new]
        lines += [f"  ! critical: {check}" for check in self.critical]
        if self.unrecorded_tools:
            lines.append(f"  ? unrecorded tools: {', '.join(self.unrecorded_tools)}")
        lines += [
            f"  ~ simulator {note.kind} at turn {note.turn_index + 1}: {note.reason}"
            for note in self.simulator_notes
        ]
        lines += [f"  note: {note}" for note in self.notes]
        return "\n".join(lines)


class ReplayFile(WireModel):
    replay_format: Literal[1] = REPLAY_FORMAT
    target: str = Field(description="The endpoint replayed against (no credentials).")
    release: str | None = Field(
        default=None, description="The release under test, as `--release` named it."
    )
    model: str | None = Field(default=None, description="The model name sent, when forced.")
    started_at: Timestamp
    finished_at: Timestamp
    repeat: int = Field(ge=1)
    simulator: SimulatorInfo
    turnwatch_version: str
    runs: list[ReplayRun]

    def save(self, path: Path) -> None:
        path.write_text(self.model_dump_json(indent=1), encoding="utf-8")

    def cases(self) -> dict[str, list[ReplayRun]]:
        by_case: dict[str, list[ReplayRun]] = {}
        for run in self.runs:
            by_case.setdefault(run.case_id, []).append(run)
        return by_case


class ReplayFileInvalid(ValueError):
    """Not a replay result file (or one of a format this turnwatch does not know)."""


def load_replay(path: Path) -> ReplayFile:
    try:
        return ReplayFile.model_validate_json(path.read_bytes())
    except OSError as exc:
        raise ReplayFileInvalid(f"{path}: cannot read ({exc.strerror or exc})") from None
    except ValidationError as exc:
        raise ReplayFileInvalid(f"{path}: not a replay result file: {first_problem(exc)}") from None


def pass_hat_k(runs: list[ReplayRun], k: int) -> float | None:
    """One case's pass^k from its counted runs; None with fewer than k of them."""
    counted = [run for run in runs if run.counted]
    n, c = len(counted), sum(run.passed for run in counted)
    if n < k:
        return None
    return comb(c, k) / comb(n, k)


class PassSummary(WireModel):
    cases: int
    runs: int
    passed: int
    failed: int
    simulator: int
    error: int
    pass_hat_k: dict[int, float | None] = Field(
        description="k -> pass^k averaged over the cases with at least k counted runs."
    )
    per_case: dict[str, float | None] = Field(description="case -> pass^K, K the repeat count.")


def summarise(runs: list[ReplayRun], repeat: int) -> PassSummary:
    by_case: dict[str, list[ReplayRun]] = {}
    for run in runs:
        by_case.setdefault(run.case_id, []).append(run)
    overall: dict[int, float | None] = {}
    for k in range(1, repeat + 1):
        values = [v for group in by_case.values() if (v := pass_hat_k(group, k)) is not None]
        overall[k] = sum(values) / len(values) if values else None
    counts = {outcome: sum(run.outcome is outcome for run in runs) for outcome in RunOutcome}
    return PassSummary(
        cases=len(by_case),
        runs=len(runs),
        passed=counts[RunOutcome.PASSED],
        failed=counts[RunOutcome.FAILED],
        simulator=counts[RunOutcome.SIMULATOR],
        error=counts[RunOutcome.ERROR],
        pass_hat_k=overall,
        per_case={case: pass_hat_k(group, repeat) for case, group in by_case.items()},
    )
