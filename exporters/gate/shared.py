"""The online canary's windows read from the session store, which every exporter replica shares.

Each replica counts its share of the sessions, so windows kept in memory (canary.py) would give
each replica a verdict on its share. With the session store on, the windows are a query instead:
per service and version, the latest revision of the last `window_sessions` sessions by scoring
time (`scored_at`, the scorer's clock, the one order every replica agrees on), at most
`max_versions` versions (the most recently scored), each version first seen at its earliest
`scored_at`. Every replica reads the same rows, so every replica computes the same verdict; one
process on the same score records keeps the same windows in memory (while they are not full:
a full window drops the oldest by arrival there, by scoring time here).

Services are the ones this replica's `service` label admits (`exporter.services` makes that the
same set on every replica); a service counted as `other` is not compared.
"""

from __future__ import annotations

from collections.abc import Callable

from turnwatch.exporters.gate.evidence import CaseEvidence, session_evidence
from turnwatch.exporters.sessions.store import SessionStore, unpack

from turnwatch.scores import ScoreRecord

Windows = dict[str, dict[str, list[CaseEvidence]]]
FirstSeen = dict[tuple[str, str], float]

VERSIONS = (
    "SELECT service, service_version, MIN(scored_at), MAX(scored_at) FROM sessions "
    "WHERE score_blob IS NOT NULL AND service_version IS NOT NULL "
    "GROUP BY service, service_version"
)
WINDOW = (
    "SELECT session_id, score_blob FROM ("
    " SELECT session_id, score_blob, ROW_NUMBER() OVER ("
    "  PARTITION BY session_id ORDER BY revision DESC) AS latest, scored_at"
    " FROM sessions WHERE score_blob IS NOT NULL"
    " AND service = :service AND service_version = :version"
    ") revisions WHERE latest = 1 ORDER BY scored_at DESC, session_id DESC LIMIT :window"
)


class StoredWindows:
    def __init__(
        self,
        store: SessionStore,
        window_sessions: int,
        max_versions: int,
        checks: list[str],
        admits: Callable[[str], bool],
    ) -> None:
        self.store = store
        self.window_sessions = window_sessions
        self.max_versions = max_versions
        self.checks = checks
        self.admits = admits

    def __call__(self) -> tuple[Windows, FirstSeen]:
        versions: dict[str, list[tuple[float, str, float]]] = {}
        for service, version, first, last in self.store.db.execute(VERSIONS):
            if self.admits(service):
                versions.setdefault(service, []).append((last, version, first))
        windows: Windows = {}
        first_seen: FirstSeen = {}
        for service, seen in versions.items():
            kept = sorted(seen, reverse=True)[: self.max_versions]
            windows[service] = {}
            for _last, version, first in kept:
                first_seen[(service, version)] = first
                windows[service][version] = self._window(service, version)
        return windows, first_seen

    def _window(self, service: str, version: str) -> list[CaseEvidence]:
        rows = self.store.db.execute(
            WINDOW, {"service": service, "version": version, "window": self.window_sessions}
        )
        records = [ScoreRecord.model_validate_json(unpack(blob) or b"") for _id, blob in rows]
        return [session_evidence(record, self.checks) for record in records]
