"""Scored, de-identified sessions for session store, review and web view tests."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from tests.test_regressions_cases import refund_over_limit, resolved
from tests.test_scorers_builders import support_scorer
from turnwatch.incidents import Incident
from turnwatch.schema import Session
from turnwatch.scores import Score, ScoreRecord

SCORER = support_scorer()
START = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)


def failing(session_id: str, service: str = "support-bot", minutes: int = 0) -> Session:
    """A refund over the limit without approval: forbidden_action and approval fail (critical)."""
    built = refund_over_limit(session_id=session_id)
    built.service = service
    built.ended_at = built.started_at = START + timedelta(minutes=minutes)
    return built


def healthy(session_id: str, service: str = "support-bot", minutes: int = 0) -> Session:
    built = resolved(session_id=session_id)
    built.service = service
    built.provenance.service_version = "1.5.0"
    built.ended_at = built.started_at = START + timedelta(minutes=minutes)
    return built


def scored(session: Session, metrics: list[Score] | None = None, seconds: int = 0) -> ScoreRecord:
    record = SCORER.score(session)
    record.scored_at = session.ended_at + timedelta(seconds=1 + seconds)
    record.metrics = list(metrics or [])
    return record


def relevancy(value: float, judge: str = "heuristic", turns: tuple[int, ...] = ()) -> Score:
    metadata: dict[str, object] = {"judge": judge, "irrelevant_turns": list(turns)}
    explanation = f"{value:.2f} of windows relevant"
    return Score(name="turn_relevancy", value=value, explanation=explanation, metadata=metadata)


def incident(session: Session, record: ScoreRecord) -> Incident:
    return Incident.of(session, record, ["critical_failure", "joint_failure"])


def record_recurrences(directory: str, first: int, count: int) -> None:
    """One exporter replica's share (run in a process of its own): incidents of one failure
    signature, each its own session, recorded in the regression case directory."""
    from turnwatch.exporters.regressions.store import CaseStore

    store = CaseStore(Path(directory))
    for number in range(first, first + count):
        flagged = failing(f"concurrent-{number}")
        store.record(incident(flagged, scored(flagged)))
