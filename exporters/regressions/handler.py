"""The exporter role's side of the loop: incidents from `turnwatch.incidents` into the store.

An incident is the envelope `turnwatch.scorers.runner.incident_record` builds (score record,
de-identified session, flag reasons). A bare score record (a scorer running without flagging
rules) cannot become a replayable case: it is acknowledged and counted as `no_session`. Records
that do not validate never will, so they are counted and acknowledged rather than retried.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError
from turnwatch.exporters.regressions.metrics import Outcome
from turnwatch.exporters.regressions.store import CaseStore

from turnwatch.bus.plugins import RecordHandler
from turnwatch.bus.records import INCIDENTS, Output
from turnwatch.schema import Session
from turnwatch.scores import ScoreRecord


def parse_incident(record: dict[str, Any]) -> tuple[Session, ScoreRecord, list[str]] | Outcome:
    if "session" not in record or "score" not in record:
        return "no_session"
    try:
        session = Session.model_validate(record["session"])
        score = ScoreRecord.model_validate(record["score"])
    except ValidationError:
        return "invalid"
    reasons = record.get("reasons")
    if not isinstance(reasons, list) or not all(isinstance(r, str) for r in reasons) or not reasons:
        return "invalid"
    return session, score, reasons


class IncidentHandler:
    """`RecordHandler` for the exporter role: writes regression cases, publishes nothing."""

    def __init__(self, store: CaseStore) -> None:
        self.store = store

    async def __call__(self, topic: str, record: dict[str, Any]) -> Sequence[Output]:
        if topic != INCIDENTS:
            return ()
        parsed = parse_incident(record)
        if isinstance(parsed, str):
            if self.store.metrics is not None:
                self.store.metrics.count(parsed)
            return ()
        # File writes block; keep them off the event loop the bus consumers share.
        await asyncio.to_thread(self.store.record, *parsed)
        return ()


def chain(*handlers: RecordHandler) -> RecordHandler:
    """One exporter handler from several (score metrics + regression cases), in order."""

    async def handle(topic: str, record: dict[str, Any]) -> Sequence[Output]:
        outputs: list[Output] = []
        for handler in handlers:
            outputs.extend(await handler(topic, record))
        return outputs

    return handle
