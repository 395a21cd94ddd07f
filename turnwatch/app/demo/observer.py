"""What the demo sees of the pipeline: every score record and incident, after the exporter.

`ScoreObserver` is a record tap the demo composes after its exporter: it runs on the service's
event loop and keeps the latest revision of each session's score record. The demo's main
thread waits on it (a condition variable) instead of polling files or metrics.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Sequence

from turnwatch.bus.records import ExporterRecord, Output
from turnwatch.incidents import Incident
from turnwatch.scores import ScoreRecord


class ScoreObserver:
    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._scores: dict[str, ScoreRecord] = {}
        self._incidents: dict[str, ScoreRecord] = {}
        self.loop: asyncio.AbstractEventLoop | None = None
        """The service's loop, learnt from the first call (the demo waits for the bus on it)."""

    async def __call__(self, topic: str, record: ExporterRecord) -> Sequence[Output]:
        self.loop = asyncio.get_running_loop()
        if isinstance(record, Incident):
            self._keep(self._incidents, record.score)
        else:
            self._keep(self._scores, record)
        return ()

    def _keep(self, into: dict[str, ScoreRecord], record: ScoreRecord) -> None:
        with self._changed:
            known = into.get(record.session_id)
            # A late span re-opens a session as a later revision: the latest one wins.
            if known is None or record.revision >= known.revision:
                into[record.session_id] = record
            self._changed.notify_all()

    def scores(self) -> dict[str, ScoreRecord]:
        with self._changed:
            return dict(self._scores)

    def incidents(self) -> dict[str, ScoreRecord]:
        with self._changed:
            return dict(self._incidents)

    def wait_for_scores(self, session_ids: set[str], timeout: float) -> set[str]:
        """Wait until every session has a score record; return the ones still missing."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while missing := session_ids - self._scores.keys():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return missing
                self._changed.wait(min(remaining, 0.5))
            return set()

    def scored_count(self, session_ids: set[str]) -> int:
        with self._changed:
            return len(session_ids & self._scores.keys())
