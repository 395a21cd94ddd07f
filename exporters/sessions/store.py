"""The session store: de-identified sessions and their score records, joined by revision.

A session revision is one row. The session (from `turnwatch.sessions`) and its score record
(from `turnwatch.scores`) arrive separately and in either order, and fill the same row, so the
join needs no buffer in memory: a row still waiting for its score is bounded by the same
retention as every other. An incident (`turnwatch.incidents`) fills both and marks the row
flagged. A later score record for the same revision (judge metrics arriving after the checks, a
rescoring) replaces the earlier one when its `scored_at` is later; an older one is `stale`.
Every judge's metric values are kept per judge, so sessions scored by two judges can be compared.
The session's resource attributes are one indexed row each (`session_attributes`), so a
selection by any of them (`deployment.environment=prod`) is an index lookup, not a blob scan.

Retention deletes the oldest unreviewed rows past `max_age_days`, `max_sessions` and
`max_bytes` (checked after every write), counting each by reason; reviewed rows are the
reference set and stay.
"""

from __future__ import annotations

import logging
import time
import zlib
from collections.abc import Iterable
from typing import Any

from turnwatch.exporters.sessions.config import RetentionConfig
from turnwatch.exporters.sessions.database import Database, Params
from turnwatch.exporters.sessions.metrics import SessionStoreMetrics, WriteOutcome
from turnwatch.exporters.sessions.model import JudgeScore, StoredSession
from turnwatch.exporters.sessions.queries import SessionQueries, summary_columns, to_summary
from turnwatch.exporters.sessions.reviews import ReviewTable

from turnwatch.incidents import Incident
from turnwatch.schema import Session
from turnwatch.scores import ScoreRecord, Status

log = logging.getLogger("turnwatch.sessions")

BYTES_UPDATE = (
    "UPDATE sessions SET bytes = COALESCE(length(session_blob), 0) "
    "+ COALESCE(length(score_blob), 0), reviewed = CASE WHEN EXISTS (SELECT 1 FROM reviews r "
    "WHERE r.session_id = sessions.session_id AND r.revision = sessions.revision) "
    "THEN 1 ELSE 0 END WHERE session_id = :session_id AND revision = :revision"
)
EVICT_CHUNK = 500


def pack(model: Session | ScoreRecord | Any) -> bytes:
    return zlib.compress(model.model_dump_json().encode(), 6)


def unpack(blob: bytes | None) -> bytes | None:
    return None if blob is None else zlib.decompress(blob)


def judge_of(metadata: dict[str, Any]) -> str:
    """`heuristic`, or `endpoint:<model>`: which judge produced a metric."""
    name = str(metadata.get("judge", "unknown"))
    model = metadata.get("model")
    return f"{name}:{model}" if model else name


def flagged_turns(metadata: dict[str, Any]) -> list[int]:
    """The turns a judge metric singled out (`irrelevant_turns`, `out_of_character_turns`...)."""
    return sorted(
        {
            turn
            for key, value in metadata.items()
            if key.endswith("_turns") and isinstance(value, list)
            for turn in value
            if isinstance(turn, int)
        }
    )


class SessionStore(SessionQueries, ReviewTable):
    def __init__(
        self,
        database: Database,
        retention: RetentionConfig | None = None,
        metrics: SessionStoreMetrics | None = None,
    ) -> None:
        super().__init__(database)
        self.retention = retention or RetentionConfig()
        self.metrics = metrics

    # -- writing ------------------------------------------------------------------------------

    def put_session(self, session: Session, now: float | None = None) -> WriteOutcome:
        outcome = self._guarded("session", lambda: self._put_session(session, now))
        self._after_write(now)
        return outcome

    def put_score(self, record: ScoreRecord, now: float | None = None) -> WriteOutcome:
        outcome = self._guarded("score", lambda: self._put_score(record, now))
        self._after_write(now)
        return outcome

    def put_incident(self, incident: Incident, now: float | None = None) -> WriteOutcome:
        def write() -> WriteOutcome:
            with self.db.transaction():
                first = self._put_session(incident.session, now)
                if first == "not_deidentified":
                    return first
                second = self._put_score(incident.score, now)
                self.db.execute(
                    "UPDATE sessions SET flagged = 1, reasons = :reasons "
                    "WHERE session_id = :session_id AND revision = :revision",
                    {**_key(incident.session), "reasons": " ".join(incident.reasons)},
                )
            return "stored" if "stored" in (first, second) else second

        outcome = self._guarded("incident", write)
        self._after_write(now)
        return outcome

    def _guarded(self, record: str, write: Any) -> WriteOutcome:
        try:
            outcome = write()
        except Exception as exc:
            # A database fault loses this record's copy in the store, never the pipeline.
            log.error("session store write failed", extra={"error": type(exc).__name__})
            outcome = "write_error"
        if self.metrics is not None:
            self.metrics.wrote(record, outcome)
        return outcome

    def _put_session(self, session: Session, now: float | None) -> WriteOutcome:
        if not session.deidentified:
            return "not_deidentified"
        key = _key(session)
        with self.db.transaction():
            rows = self.db.execute(
                "SELECT session_blob IS NOT NULL FROM sessions "
                "WHERE session_id = :session_id AND revision = :revision",
                key,
            )
            if rows and rows[0][0]:
                return "duplicate"
            self._upsert(
                {
                    **key,
                    "service": session.service,
                    "service_version": session.provenance.service_version,
                    "stored_at": now or time.time(),
                    "ended_at": session.ended_at.timestamp(),
                    "turns": len(session.turns),
                    "session_blob": pack(session),
                },
                keep_on_update=("stored_at",),
            )
            self.db.execute(BYTES_UPDATE, key)
            self._put_attributes(key, session)
        return "stored"

    def _put_score(self, record: ScoreRecord, now: float | None) -> WriteOutcome:
        key = {"session_id": record.session_id, "revision": record.revision}
        blob = pack(record)
        scored_at = record.scored_at.timestamp()
        # The online canary's shared windows select by version (gate/shared.py).
        version = {"service_version": record.service_version} if record.service_version else {}
        with self.db.transaction():
            self._put_judges(record)
            rows = self.db.execute(
                "SELECT scored_at, score_blob FROM sessions "
                "WHERE session_id = :session_id AND revision = :revision",
                key,
            )
            known = rows[0] if rows and rows[0][0] is not None else None
            if known is not None:
                if scored_at < known[0]:
                    return "stale"
                if scored_at == known[0] and unpack(known[1]) == unpack(blob):
                    return "duplicate"
            joint = record.joint_success.value
            self._upsert(
                {
                    **key,
                    "service": record.service,
                    **version,
                    "stored_at": now or time.time(),
                    "score_blob": blob,
                    "scored_at": scored_at,
                    "joint_success": None if joint is None else int(joint),
                    "critical": len(record.critical_failures),
                },
                keep_on_update=("stored_at", "service"),
            )
            self.db.execute(BYTES_UPDATE, key)
            self._put_tags(key, record)
        return "stored" if known is None else "updated"

    def _upsert(self, values: dict[str, Any], keep_on_update: Iterable[str]) -> None:
        columns = list(values)
        kept = {"session_id", "revision", *keep_on_update}
        updates = ", ".join(f"{c} = excluded.{c}" for c in columns if c not in kept)
        self.db.execute(
            f"INSERT INTO sessions ({', '.join(columns)}) "
            f"VALUES ({', '.join(':' + c for c in columns)}) "
            f"ON CONFLICT (session_id, revision) DO UPDATE SET {updates}",
            values,
        )

    def _put_tags(self, key: Params, record: ScoreRecord) -> None:
        self.db.execute(
            "DELETE FROM session_tags WHERE session_id = :session_id AND revision = :revision", key
        )
        tags = {("check", r.check) for r in record.results() if r.status is Status.FAILED}
        tags |= {("critical", finding.check) for finding in record.critical_failures}
        tags |= {("slice", tag.slice.value) for tag in record.slices}
        rows = [{**key, "kind": kind, "value": value} for kind, value in sorted(tags)]
        if rows:
            self.db.executemany(
                "INSERT INTO session_tags (session_id, revision, kind, value) "
                "VALUES (:session_id, :revision, :kind, :value)",
                rows,
            )

    def _put_attributes(self, key: Params, session: Session) -> None:
        rows = [
            {**key, "name": name, "value": value}
            for name, value in session.provenance.resource_attributes.items()
        ]
        if rows:
            self.db.executemany(
                "INSERT INTO session_attributes (session_id, revision, name, value) "
                "VALUES (:session_id, :revision, :name, :value) "
                "ON CONFLICT (session_id, revision, name) DO NOTHING",
                rows,
            )

    def _put_judges(self, record: ScoreRecord) -> None:
        rows = [
            {
                "session_id": record.session_id,
                "revision": record.revision,
                "judge": judge_of(score.metadata),
                "metric": score.name,
                "value": score.value,
                "turns": " ".join(str(turn) for turn in flagged_turns(score.metadata)),
            }
            for score in record.metrics
        ]
        if rows:
            self.db.executemany(
                "INSERT INTO judge_scores (session_id, revision, judge, metric, value, turns) "
                "VALUES (:session_id, :revision, :judge, :metric, :value, :turns) "
                "ON CONFLICT (session_id, revision, judge, metric) "
                "DO UPDATE SET value = excluded.value, turns = excluded.turns",
                rows,
            )

    # -- retention ----------------------------------------------------------------------------

    def _after_write(self, now: float | None) -> None:
        try:
            self.enforce_retention(now)
        except Exception as exc:
            log.error("session store retention failed", extra={"error": type(exc).__name__})

    def enforce_retention(self, now: float | None = None) -> None:
        limits = self.retention
        cutoff = (now or time.time()) - limits.max_age_days * 86_400
        old = self.db.execute(
            "SELECT session_id, revision FROM sessions WHERE reviewed = 0 AND stored_at < :cutoff",
            {"cutoff": cutoff},
        )
        self._evict(old, "age")
        count = self.db.execute("SELECT COUNT(*) FROM sessions WHERE reviewed = 0")[0][0]
        if count > limits.max_sessions:
            self._evict(self._oldest(count - limits.max_sessions), "count")
        total = self.db.execute("SELECT COALESCE(SUM(bytes), 0) FROM sessions WHERE reviewed = 0")
        excess = int(total[0][0]) - limits.max_bytes
        while excess > 0:
            rows = self.db.execute(
                "SELECT session_id, revision, bytes FROM sessions WHERE reviewed = 0 "
                "ORDER BY stored_at, session_id, revision LIMIT :n",
                {"n": EVICT_CHUNK},
            )
            chosen = []
            for session_id, revision, size in rows:
                if excess <= 0:
                    break
                chosen.append((session_id, revision))
                excess -= size
            if not chosen:
                break
            self._evict(chosen, "bytes")
        self._show_gauges()

    def _oldest(self, n: int) -> list[tuple[str, int]]:
        rows = self.db.execute(
            "SELECT session_id, revision FROM sessions WHERE reviewed = 0 "
            "ORDER BY stored_at, session_id, revision LIMIT :n",
            {"n": n},
        )
        return [(row[0], row[1]) for row in rows]

    def _evict(self, keys: list[tuple[str, int]] | list[Any], reason: str) -> None:
        if not keys:
            return
        params = [{"session_id": key[0], "revision": key[1]} for key in keys]
        with self.db.transaction():
            for table in ("sessions", "session_tags", "session_attributes", "judge_scores"):
                self.db.executemany(
                    f"DELETE FROM {table} WHERE session_id = :session_id AND revision = :revision",
                    params,
                )
        if self.metrics is not None:
            self.metrics.evicted.labels(reason).inc(len(params))

    def _show_gauges(self) -> None:
        if self.metrics is None:
            return
        counts = {"awaiting_score": 0, "scored": 0, "reviewed": 0}
        rows = self.db.execute(
            "SELECT reviewed, score_blob IS NULL, COUNT(*), COALESCE(SUM(bytes), 0) "
            "FROM sessions GROUP BY reviewed, score_blob IS NULL"
        )
        total = 0
        for reviewed, awaiting, count, size in rows:
            state = "reviewed" if reviewed else "awaiting_score" if awaiting else "scored"
            counts[state] += count
            total += int(size)
        for state, count in counts.items():
            self.metrics.sessions.labels(state).set(count)
        self.metrics.bytes.set(total)

    # -- reading ------------------------------------------------------------------------------

    def get(self, session_id: str, revision: int | None = None) -> StoredSession | None:
        params: dict[str, Any] = {"session_id": session_id}
        where = "s.session_id = :session_id"
        if revision is not None:
            where += " AND s.revision = :revision"
            params["revision"] = revision
        rows = self.db.execute(
            f"SELECT {summary_columns()}, s.session_blob, s.score_blob FROM sessions s "
            f"WHERE {where} ORDER BY s.revision DESC LIMIT 1",
            params,
        )
        if not rows:
            return None
        row = rows[0]
        keys = [row[:2]]
        summary = to_summary(
            row[:-2], self._tags(keys), self._review_counts(keys), self._attributes(keys)
        )
        session_json, score_json = unpack(row[-2]), unpack(row[-1])
        return StoredSession(
            summary=summary,
            session=Session.model_validate_json(session_json) if session_json else None,
            score=ScoreRecord.model_validate_json(score_json) if score_json else None,
            judges=self.judge_scores(summary.session_id, summary.revision),
        )

    def judge_scores(self, session_id: str, revision: int) -> list[JudgeScore]:
        rows = self.db.execute(
            "SELECT judge, metric, value, turns FROM judge_scores "
            "WHERE session_id = :session_id AND revision = :revision ORDER BY judge, metric",
            {"session_id": session_id, "revision": revision},
        )
        return [
            JudgeScore(judge=j, metric=m, value=v, turns=[int(t) for t in turns.split()])
            for j, m, v, turns in rows
        ]


def _key(session: Session) -> dict[str, Any]:
    return {"session_id": session.session_id, "revision": session.revision}
