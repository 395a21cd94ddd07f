"""Count claims: the session store decides which exporter member counts a score record's part.

Delivery is at-least-once, and a record can reach two members: the one that counted it but was
killed (or lost its partition) before committing its offset, and the partition's next owner.
Each member's memory of what it counted (`turnwatch.revisions`) sees only its own share, so the
arbiter is the database every member already shares: a member counts a part of
(session_id, revision) only if its `INSERT ... ON CONFLICT DO NOTHING` into `counted_parts` is
the one that inserted the row. PostgreSQL makes a second insert of the same key wait for the
first one's transaction and then find the row, so two members racing on one record count it once.

Each delivery is one `attempt` (a random token kept across its retries): a retry after a commit
whose answer was lost finds its own rows and still counts, where a redelivery, a new attempt,
finds another's. A claim is written before the counters move; a member killed in between loses
that record's counts (as it loses every count since its last scrape), it never adds one twice.
Rows are deleted `exporter.claim_retention_hours` after the claim: a redelivery comes within
minutes of the first delivery (the next owner resumes from the last commit).

Sent marks do the same for evaluation events, with the opposite order: a part is marked in
`sent_events` only after the backend accepted its events, and a member sends a part's events
unless the mark is there. A claim alone says nothing about the events (its member may have died
before sending them), so a member that claimed and died leaves them to the next owner, and one
that sent them and was killed before its mark sends them again: at-least-once, with the same
event ids (`evaluation_events.event_id`) for the receiver to drop the copy.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

from turnwatch.exporters.sessions.database import Database

CLAIM = (
    "INSERT INTO counted_parts (session_id, revision, part, attempt, counted_at) "
    "VALUES (:session_id, :revision, :part, :attempt, :counted_at) "
    "ON CONFLICT (session_id, revision, part) DO NOTHING"
)
WON = (
    "SELECT part FROM counted_parts "
    "WHERE session_id = :session_id AND revision = :revision AND attempt = :attempt"
)
SENT = "SELECT part FROM sent_events WHERE session_id = :session_id AND revision = :revision"
MARK = (
    "INSERT INTO sent_events (session_id, revision, part, sent_at) "
    "VALUES (:session_id, :revision, :part, :sent_at) "
    "ON CONFLICT (session_id, revision, part) DO NOTHING"
)
PRUNE_EVERY_SECONDS = 60.0
PartKey = tuple[str, int, str]
"""(session_id, revision, part)."""


class _Retention:
    """Deletes a table's rows older than the retention, at most once a minute, inside the
    caller's transaction."""

    def __init__(self, database: Database, retention_hours: float, table: str, column: str):
        self.db = database
        self.retention_seconds = retention_hours * 3600
        self.delete = f"DELETE FROM {table} WHERE {column} < :cutoff"
        self._pruned_at = 0.0

    def due(self, now: float) -> bool:
        return now - self._pruned_at >= PRUNE_EVERY_SECONDS

    def prune(self, now: float) -> None:
        self.db.execute(self.delete, {"cutoff": now - self.retention_seconds})

    def pruned(self, now: float) -> None:
        self._pruned_at = now


class CountClaims(_Retention):
    def __init__(self, database: Database, retention_hours: float) -> None:
        super().__init__(database, retention_hours, "counted_parts", "counted_at")

    def claim(
        self,
        session_id: str,
        revision: int,
        parts: Iterable[str],
        attempt: str,
        now: float | None = None,
    ) -> frozenset[str]:
        """The parts `attempt` holds (those no other delivery claimed first), in one
        transaction; raises when the database cannot be written, and then nothing is claimed."""
        parts = frozenset(parts)
        now = time.time() if now is None else now
        key = {"session_id": session_id, "revision": revision, "attempt": attempt}
        prune = self.due(now)
        with self.db.transaction():
            if prune:
                self.prune(now)
            self.db.executemany(
                CLAIM, [{**key, "part": part, "counted_at": now} for part in sorted(parts)]
            )
            won = frozenset(row[0] for row in self.db.execute(WON, key))
        if prune:
            self.pruned(now)
        return won & parts


class SentMarks(_Retention):
    """Which parts' evaluation events a backend accepted, kept as long as the count claims."""

    def __init__(self, database: Database, retention_hours: float) -> None:
        super().__init__(database, retention_hours, "sent_events", "sent_at")

    def sent(self, session_id: str, revision: int) -> frozenset[str]:
        """The parts of (session_id, revision) whose events were sent; raises when the
        database cannot be read."""
        key = {"session_id": session_id, "revision": revision}
        return frozenset(row[0] for row in self.db.execute(SENT, key))

    def mark(self, parts: Iterable[PartKey], now: float | None = None) -> None:
        """Mark `parts` sent, in one transaction; raises when the database cannot be written,
        and then nothing is marked."""
        now = time.time() if now is None else now
        rows = [
            {"session_id": session_id, "revision": revision, "part": part, "sent_at": now}
            for session_id, revision, part in sorted(parts)
        ]
        prune = self.due(now)
        with self.db.transaction():
            if prune:
                self.prune(now)
            self.db.executemany(MARK, rows)
        if prune:
            self.pruned(now)
