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
PRUNE_EVERY_SECONDS = 60.0


class CountClaims:
    def __init__(self, database: Database, retention_hours: float) -> None:
        self.db = database
        self.retention_seconds = retention_hours * 3600
        self._pruned_at = 0.0

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
        prune = now - self._pruned_at >= PRUNE_EVERY_SECONDS
        with self.db.transaction():
            if prune:
                self.db.execute(
                    "DELETE FROM counted_parts WHERE counted_at < :cutoff",
                    {"cutoff": now - self.retention_seconds},
                )
            self.db.executemany(
                CLAIM, [{**key, "part": part, "counted_at": now} for part in sorted(parts)]
            )
            won = frozenset(row[0] for row in self.db.execute(WON, key))
        if prune:
            self._pruned_at = now
        return won & parts
