"""One incident -> one regression case in the dataset schema of the evaluation guide.

The case (`model.Case`) keeps the seed schema's fields and adds what replay and triage need: each
turn's tool calls with their recorded results, provenance (versions, timestamps, tool attempt ids,
trace ids), the findings with their evidence, and the occurrence bookkeeping the store maintains.
A disclosed token and its owner come from the disclosure finding's evidence, never from its
explanation. Only de-identified sessions are accepted: a case file is written outside the
collector, so raw text must never reach one.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime

from turnwatch.exporters.regressions.model import (
    BrokenAt,
    Case,
    CaseFinding,
    CaseToolCall,
    CaseTurn,
    FailedCheck,
    Findings,
    InitialState,
    MetricValue,
    Occurrence,
    Policy,
    Provenance,
    Sampling,
    ToolAttempt,
    UnscoredCheck,
)
from turnwatch.exporters.regressions.signature import Signature
from turnwatch.scorers.contract import DEFAULT_CRITICAL, Contract

from turnwatch import __version__
from turnwatch.schema import JsonValue, Role, Session, Turn
from turnwatch.scores import Finding, Level, ScoreRecord, Status
from turnwatch.tokens import TOKEN


class NotDeidentified(ValueError):
    """The session did not pass through de-identification; it must not become a case file."""


def turn_id(index: int) -> int:
    # The guide numbers turns from 1; session turn indexes start at 0.
    return index + 1


def build_case(
    session: Session,
    record: ScoreRecord,
    reasons: list[str],
    sig: Signature,
    dataset_version: str,
    contract: Contract | None = None,
    seen_at: datetime | None = None,
) -> Case:
    if not session.deidentified:
        raise NotDeidentified(session.session_id)
    seen_at = seen_at or datetime.now(UTC)
    return Case(
        case_id=sig.case_id,
        conversation_id=sig.case_id,
        dataset_version=dataset_version,
        scenario=_scenario(sig, record),
        slice=sorted({tag.slice.value for tag in record.slices}),
        initial_state=InitialState(
            user_id=session.user_id,
            system_instructions=list(session.system_instructions),
            known_token_owners=_token_owners(record),
        ),
        turns=[_turn(turn, contract) for turn in session.turns],
        required_facts=[fact.id for fact in contract.required_facts] if contract else [],
        forbidden_actions=[action.id for action in contract.forbidden_actions] if contract else [],
        success=contract.success.model_dump(mode="json")
        if contract is not None and contract.success is not None
        else {},
        critical_failures=list(contract.critical if contract else DEFAULT_CRITICAL),
        rubric_version=f"{contract.id}@{contract.version}" if contract else "generic",
        chatbot_role=contract.chatbot_role if contract else None,
        signature=sig._asdict(),
        occurrence_count=1,
        first_seen=seen_at,
        last_seen=seen_at,
        occurrences=[occurrence(session, reasons, seen_at)],
        provenance=_provenance(session, contract),
        findings=_findings(record, reasons),
    )


def occurrence(session: Session, reasons: list[str], seen_at: datetime) -> Occurrence:
    return Occurrence(
        session_id=session.session_id,
        revision=session.revision,
        seen_at=seen_at,
        reasons=reasons,
        trace_ids=list(session.trace_ids),
    )


def _scenario(sig: Signature, record: ScoreRecord) -> str:
    broken = record.first_broken_transition
    where = f" first broken at turn {turn_id(broken.turn_index)}" if broken else ""
    return f"production incident on {sig.service}: {sig.check}{where} ({sig.transition})"


def _token_owners(record: ScoreRecord) -> dict[str, str]:
    """Other users' tokens this conversation disclosed, with their owners (from the evidence).

    Replay scores with a fresh scorer whose owner index knows nobody; seeding it with these lets
    the disclosure check recognise the same leak in the new transcript.
    """
    return {
        finding.evidence.token: finding.evidence.owner
        for result in record.results()
        if result.check == "cross_user_disclosure"
        for finding in result.findings
        if finding.evidence.token is not None and finding.evidence.owner is not None
    }


def _turn(turn: Turn, contract: Contract | None) -> CaseTurn:
    return CaseTurn(
        turn_id=turn_id(turn.index),
        role=turn.role,
        content=turn.text,
        facts_revealed=_facts(turn, contract) if contract is not None else None,
        tool_calls=[
            CaseToolCall(
                id=call.id,
                name=call.name,
                arguments=call.arguments,
                result=call.result,
                error=call.error,
                started_at=call.started_at,
                duration_ms=call.duration_ms,
            )
            for call in turn.tool_calls
        ]
        or None,
        tool_call_id=turn.tool_call_id,
        name=turn.name,
        started_at=turn.started_at,
        latency_ms=turn.latency_ms,
        model=turn.model,
        trace_id=turn.trace_id,
        redacted=turn.redacted or None,
        truncated=turn.truncated or None,
    )


def _facts(turn: Turn, contract: Contract) -> list[str]:
    """Required facts whose token type appears in what this turn brought in (user or tool)."""
    texts: list[str] = []
    if turn.role is Role.USER and turn.text:
        texts.append(turn.text)
    for call in turn.tool_calls:
        if call.result is not None:
            texts.append(_as_text(call.result))
    if turn.role is Role.TOOL and turn.text:
        texts.append(turn.text)
    types = {match.group(1) for text in texts for match in TOKEN.finditer(text)}
    return [fact.id for fact in contract.required_facts if types & set(fact.entities)]


def _as_text(value: JsonValue) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)


def _provenance(session: Session, contract: Contract | None) -> Provenance:
    p = session.provenance
    prompt = "\n".join(session.system_instructions)
    return Provenance(
        service=session.service,
        service_version=p.service_version,
        models=list(p.models),
        providers=list(p.providers),
        agent_name=p.agent_name,
        agent_version=p.agent_version,
        # Spans carry no prompt version: a digest of the (de-identified) system prompt tells
        # whether two occurrences ran the same prompt.
        prompt_sha256=hashlib.sha256(prompt.encode()).hexdigest() if prompt else None,
        tools=sorted({call.name for turn in session.turns for call in turn.tool_calls}),
        policy=Policy(contract_id=contract.id, contract_version=contract.version)
        if contract
        else None,
        turnwatch_version=__version__,
        session_id=session.session_id,
        revision=session.revision,
        started_at=session.started_at,
        ended_at=session.ended_at,
        trace_ids=list(session.trace_ids),
        tool_attempts=[
            ToolAttempt(
                id=call.id,
                name=call.name,
                turn_id=turn_id(turn.index),
                started_at=call.started_at,
                duration_ms=call.duration_ms,
                failed=call.error is not None,
            )
            for turn in session.turns
            for call in turn.tool_calls
        ],
        sampling=Sampling(reason=session.sampling.reason, rate=session.sampling.rate),
        dialects=list(p.dialects),
        close_reason=session.close_reason,
        incomplete=session.incomplete,
        truncated=session.truncated,
    )


def _finding(finding: Finding) -> CaseFinding:
    return CaseFinding(
        check=finding.check,
        turn_id=None if finding.turn_index is None else turn_id(finding.turn_index),
        severity=finding.severity,
        explanation=finding.explanation,
        evidence=finding.evidence,
    )


def _findings(record: ScoreRecord, reasons: list[str]) -> Findings:
    levels = {
        Level.TURN: record.turn_level,
        Level.TRAJECTORY: record.trajectory_level,
        Level.SESSION: record.session_level,
    }
    broken = record.first_broken_transition
    return Findings(
        reasons=reasons,
        scored_at=record.scored_at,
        contract=record.contract,
        joint_success=record.joint_success,
        first_broken_transition=BrokenAt(turn_id=turn_id(broken.turn_index), check=broken.check)
        if broken
        else None,
        critical_failures=[_finding(finding) for finding in record.critical_failures],
        failed_checks=[
            FailedCheck(
                check=result.check,
                level=level,
                value=result.value,
                findings=[_finding(finding) for finding in result.findings],
            )
            for level, results in levels.items()
            for result in results
            if result.status is Status.FAILED
        ],
        unscored_checks=[
            UnscoredCheck(check=result.check, level=level, reason=result.unscored_reason)
            for level, results in levels.items()
            for result in results
            if result.status is Status.UNSCORED
        ],
        metrics=[
            MetricValue(name=score.name, value=score.value, unscored_reason=score.unscored_reason)
            for score in record.metrics
        ],
        budgets=record.budgets,
    )
