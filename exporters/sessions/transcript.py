"""A stored session as a reader sees it: turns with their tool calls, each finding at its turn
with its evidence, the first broken transition marked, judge metrics with their explanations.
`turnwatch sessions show` prints it, `--json` dumps it, and the web view renders it."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel
from turnwatch.exporters.sessions.model import JudgeScore, SessionSummary, StoredSession
from turnwatch.exporters.sessions.store import judge_of

from turnwatch.schema import JsonValue, Turn
from turnwatch.scores import Finding, ScoreRecord, Status


def _json(value: JsonValue) -> str | None:
    if value is None:
        return None
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=str)


class ToolCallView(BaseModel):
    id: str | None
    name: str
    arguments: str | None
    result: str | None
    error: str | None
    duration_ms: float | None


class FindingView(BaseModel):
    check: str
    turn_index: int | None
    severity: str
    critical: bool
    explanation: str
    evidence: dict[str, Any]

    @property
    def key(self) -> str:
        """How the review form names this finding: `check@turn` (`@session` for none)."""
        return f"{self.check}@{'session' if self.turn_index is None else self.turn_index}"


class TurnView(BaseModel):
    index: int
    role: str
    text: str | None
    name: str | None
    model: str | None
    latency_ms: float | None
    tool_calls: list[ToolCallView]
    findings: list[FindingView]
    first_broken: str | None
    """The check whose failure here is the session's first broken transition."""
    slices: list[str]


class MetricView(BaseModel):
    name: str
    value: float | None
    explanation: str | None
    unscored_reason: str | None
    judge: str | None
    turns: list[int]


class Transcript(BaseModel):
    summary: SessionSummary
    complete: bool
    """False while the session or its score record has not arrived."""
    close_reason: str | None
    incomplete_reasons: list[str]
    system_instructions: list[str]
    turns: list[TurnView]
    session_findings: list[FindingView]
    metrics: list[MetricView]
    other_judges: list[JudgeScore]
    joint_conditions: dict[str, bool | None]
    first_broken: dict[str, Any] | None
    unscored_checks: list[tuple[str, str]]


def findings_of(record: ScoreRecord) -> list[FindingView]:
    critical = {(f.check, f.turn_index) for f in record.critical_failures}
    return [_finding(f, (f.check, f.turn_index) in critical) for r in record.results()
            for f in r.findings]  # fmt: skip


def _finding(finding: Finding, critical: bool) -> FindingView:
    return FindingView(
        check=finding.check,
        turn_index=finding.turn_index,
        severity=finding.severity.value,
        critical=critical,
        explanation=finding.explanation,
        evidence=finding.evidence.model_dump(exclude_none=True),
    )


def _turn(turn: Turn, findings: list[FindingView], record: ScoreRecord | None) -> TurnView:
    broken = record.first_broken_transition if record is not None else None
    slices = [t.slice.value for t in record.slices if t.turn_index == turn.index] if record else []
    return TurnView(
        index=turn.index,
        role=turn.role.value,
        text=turn.text,
        name=turn.name,
        model=turn.model,
        latency_ms=turn.latency_ms,
        tool_calls=[
            ToolCallView(
                id=call.id,
                name=call.name,
                arguments=_json(call.arguments),
                result=_json(call.result),
                error=call.error,
                duration_ms=call.duration_ms,
            )
            for call in turn.tool_calls
        ],
        findings=[f for f in findings if f.turn_index == turn.index],
        first_broken=broken.check
        if broken is not None and broken.turn_index == turn.index
        else None,
        slices=slices,
    )


def transcript(stored: StoredSession) -> Transcript:
    session, record = stored.session, stored.score
    findings = findings_of(record) if record is not None else []
    flagged = {(j.judge, j.metric): j.turns for j in stored.judges}
    metrics = []
    for score in record.metrics if record is not None else []:
        judge = judge_of(score.metadata)
        metrics.append(
            MetricView(
                name=score.name,
                value=score.value,
                explanation=score.explanation,
                unscored_reason=score.unscored_reason,
                judge=judge,
                turns=flagged.pop((judge, score.name), []),
            )
        )
    turns = [_turn(turn, findings, record) for turn in session.turns] if session else []
    broken = record.first_broken_transition if record is not None else None
    return Transcript(
        summary=stored.summary,
        complete=session is not None and record is not None,
        close_reason=session.close_reason.value if session else None,
        incomplete_reasons=session.incomplete_reasons if session else [],
        system_instructions=session.system_instructions if session else [],
        turns=turns,
        session_findings=[f for f in findings if f.turn_index is None],
        metrics=metrics,
        other_judges=[j for j in stored.judges if (j.judge, j.metric) in flagged],
        joint_conditions=record.joint_success.conditions if record is not None else {},
        first_broken=broken.model_dump() if broken is not None else None,
        unscored_checks=[
            (r.check, r.unscored_reason or "")
            for r in (record.results() if record is not None else [])
            if r.status is Status.UNSCORED
        ],
    )
