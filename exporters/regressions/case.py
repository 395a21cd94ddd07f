"""One incident -> one regression case in the dataset schema of the evaluation guide.

The case keeps the seed schema's fields (conversation_id, dataset_version, scenario, slice,
initial_state, turns, required_facts, forbidden_actions, success, critical_failures,
rubric_version) and adds what replay and triage need: each turn's tool calls with their recorded
results, provenance (versions, timestamps, tool attempt ids, trace ids), the findings, and the
occurrence bookkeeping the store maintains. Only de-identified sessions are accepted: a case file
is written outside the collector, so raw text must never reach one.
"""

from __future__ import annotations

import hashlib
import json
import re
from datetime import UTC, datetime
from typing import Any

from turnwatch.exporters.regressions.signature import Signature
from turnwatch.scorers.contract import DEFAULT_CRITICAL, Contract

from turnwatch import __version__
from turnwatch.schema import JsonValue, Role, Session, Turn
from turnwatch.scores import Finding, ScoreRecord, Status
from turnwatch.tokens import TOKEN

CASE_FORMAT = 1
# Coupled to the explanation of scorers/checks/disclosure.py: "... contains <TOKEN>, supplied by
# another user (<OWNER>) ...". Both are pseudonyms, so they may be stored.
DISCLOSED = re.compile(
    r"contains (<[A-Z][A-Z0-9_]*_[0-9a-f]{8}>), supplied by another user \((<[^()]+>)\)"
)

Case = dict[str, Any]


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
    case_id = sig.case_id
    return {
        "case_format": CASE_FORMAT,
        "case_id": case_id,
        "conversation_id": case_id,
        "dataset_version": dataset_version,
        "scenario": _scenario(sig, record),
        "slice": sorted({tag.slice.value for tag in record.slices}),
        "initial_state": {
            "user_id": session.user_id,
            "system_instructions": list(session.system_instructions),
            "known_token_owners": _token_owners(record),
        },
        "turns": [_turn(turn, contract) for turn in session.turns],
        "required_facts": [fact.id for fact in contract.required_facts] if contract else [],
        "forbidden_actions": [action.id for action in contract.forbidden_actions]
        if contract
        else [],
        "success": contract.success.model_dump(mode="json")
        if contract is not None and contract.success is not None
        else {},
        "critical_failures": list(contract.critical if contract else DEFAULT_CRITICAL),
        "rubric_version": f"{contract.id}@{contract.version}" if contract else "generic",
        "chatbot_role": contract.chatbot_role if contract else None,
        "signature": sig._asdict(),
        "occurrence_count": 1,
        "first_seen": _iso(seen_at),
        "last_seen": _iso(seen_at),
        "occurrences": [occurrence(session, reasons, seen_at)],
        "provenance": _provenance(session, contract),
        "findings": _findings(record, reasons),
    }


def occurrence(session: Session, reasons: list[str], seen_at: datetime) -> dict[str, Any]:
    return {
        "session_id": session.session_id,
        "revision": session.revision,
        "seen_at": _iso(seen_at),
        "reasons": reasons,
        "trace_ids": list(session.trace_ids),
    }


def _iso(moment: datetime | None) -> str | None:
    return None if moment is None else moment.astimezone(UTC).isoformat()


def _scenario(sig: Signature, record: ScoreRecord) -> str:
    broken = record.first_broken_transition
    where = f" first broken at turn {turn_id(broken.turn_index)}" if broken else ""
    return f"production incident on {sig.service}: {sig.check}{where} ({sig.transition})"


def _token_owners(record: ScoreRecord) -> dict[str, str]:
    """Other users' tokens this conversation disclosed, with their owners.

    Replay scores with a fresh scorer whose owner index knows nobody; seeding it with these lets
    the disclosure check recognise the same leak in the new transcript.
    """
    owners = {}
    for result in record.results():
        if result.check != "cross_user_disclosure":
            continue
        for finding in result.findings:
            match = DISCLOSED.search(finding.explanation)
            if match:
                owners[match.group(1)] = match.group(2)
    return owners


def _turn(turn: Turn, contract: Contract | None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "turn_id": turn_id(turn.index),
        "role": turn.role.value,
        "content": turn.text,
    }
    if contract is not None:
        out["facts_revealed"] = _facts(turn, contract)
    if turn.tool_calls:
        out["tool_calls"] = [
            {
                "id": call.id,
                "name": call.name,
                "arguments": call.arguments,
                "result": call.result,
                "error": call.error,
                "started_at": _iso(call.started_at),
                "duration_ms": call.duration_ms,
            }
            for call in turn.tool_calls
        ]
    optional = {
        "tool_call_id": turn.tool_call_id,
        "name": turn.name,
        "started_at": _iso(turn.started_at),
        "latency_ms": turn.latency_ms,
        "model": turn.model,
        "trace_id": turn.trace_id,
        "redacted": turn.redacted or None,
        "truncated": turn.truncated or None,
    }
    out.update({key: value for key, value in optional.items() if value is not None})
    return out


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


def _provenance(session: Session, contract: Contract | None) -> dict[str, Any]:
    p = session.provenance
    prompt = "\n".join(session.system_instructions)
    return {
        "service": session.service,
        "service_version": p.service_version,
        "models": list(p.models),
        "providers": list(p.providers),
        "agent_name": p.agent_name,
        "agent_version": p.agent_version,
        # Spans carry no prompt version: a digest of the (de-identified) system prompt tells
        # whether two occurrences ran the same prompt.
        "prompt_sha256": hashlib.sha256(prompt.encode()).hexdigest() if prompt else None,
        "tools": sorted({call.name for turn in session.turns for call in turn.tool_calls}),
        "policy": {"contract_id": contract.id, "contract_version": contract.version}
        if contract
        else None,
        "turnwatch_version": __version__,
        "session_id": session.session_id,
        "revision": session.revision,
        "started_at": _iso(session.started_at),
        "ended_at": _iso(session.ended_at),
        "trace_ids": list(session.trace_ids),
        "tool_attempts": [
            {
                "id": call.id,
                "name": call.name,
                "turn_id": turn_id(turn.index),
                "started_at": _iso(call.started_at),
                "duration_ms": call.duration_ms,
                "failed": call.error is not None,
            }
            for turn in session.turns
            for call in turn.tool_calls
        ],
        "sampling": {"reason": session.sampling.reason.value, "rate": session.sampling.rate},
        "dialects": list(p.dialects),
        "close_reason": session.close_reason.value,
        "incomplete": session.incomplete,
        "truncated": session.truncated,
    }


def _finding(finding: Finding) -> dict[str, Any]:
    return {
        "check": finding.check,
        "turn_id": None if finding.turn_index is None else turn_id(finding.turn_index),
        "severity": finding.severity.value,
        "explanation": finding.explanation,
    }


def _findings(record: ScoreRecord, reasons: list[str]) -> dict[str, Any]:
    levels = {
        "turn": record.turn_level,
        "trajectory": record.trajectory_level,
        "session": record.session_level,
    }
    broken = record.first_broken_transition
    return {
        "reasons": reasons,
        "scored_at": _iso(record.scored_at),
        "contract": record.contract.model_dump() if record.contract else None,
        "joint_success": record.joint_success.model_dump(mode="json"),
        "first_broken_transition": {"turn_id": turn_id(broken.turn_index), "check": broken.check}
        if broken
        else None,
        "critical_failures": [_finding(finding) for finding in record.critical_failures],
        "failed_checks": [
            {
                "check": result.check,
                "level": level,
                "value": result.value,
                "findings": [_finding(finding) for finding in result.findings],
            }
            for level, results in levels.items()
            for result in results
            if result.status is Status.FAILED
        ],
        "unscored_checks": [
            {"check": result.check, "level": level, "reason": result.unscored_reason}
            for level, results in levels.items()
            for result in results
            if result.status is Status.UNSCORED
        ],
        "metrics": [
            {"name": score.name, "value": score.value, "unscored_reason": score.unscored_reason}
            for score in record.metrics
        ],
        "budgets": record.budgets.model_dump(mode="json"),
    }
