"""Reading the session store: filtered pages of summaries, service overviews, the review queue."""

from __future__ import annotations

import hashlib
from collections import defaultdict
from typing import Any

from pydantic import BaseModel
from turnwatch.exporters.sessions.database import Database, Row
from turnwatch.exporters.sessions.model import (
    Page,
    ServiceOverview,
    SessionFilters,
    SessionSummary,
    from_epoch,
)

SUMMARY_COLUMNS = (
    "session_id",
    "revision",
    "service",
    "service_version",
    "ended_at",
    "turns",
    "score_blob IS NOT NULL",
    "joint_success",
    "critical",
    "flagged",
    "reasons",
)
FLAGGED = "(s.flagged = 1 OR s.critical > 0 OR COALESCE(s.joint_success, 1) = 0)"
QUEUE_CANDIDATES = 5000
"""Unflagged, unreviewed sessions (newest first) the stratified sample is drawn from."""

Key = tuple[str, int]


def summary_columns() -> str:
    return ", ".join(f"s.{column}" for column in SUMMARY_COLUMNS)


def to_summary(
    row: Row,
    tags: dict[Key, dict[str, list[str]]],
    reviews: dict[Key, int],
    attributes: dict[Key, dict[str, str]],
):
    key = (row[0], row[1])
    found = tags.get(key, {})
    return SessionSummary(
        session_id=row[0],
        revision=row[1],
        service=row[2],
        service_version=row[3],
        ended_at=from_epoch(row[4]),
        turns=row[5],
        scored=bool(row[6]),
        joint_success=None if row[7] is None else bool(row[7]),
        critical=row[8],
        flagged=bool(row[9]) or row[8] > 0 or row[7] == 0,
        reasons=row[10].split(),
        failed_checks=found.get("check", []),
        slices=found.get("slice", []),
        reviews=reviews.get(key, 0),
        attributes=attributes.get(key, {}),
    )


def _tag_filter(kind: str, name: str) -> str:
    return (
        "EXISTS (SELECT 1 FROM session_tags t WHERE t.session_id = s.session_id "
        f"AND t.revision = s.revision AND t.kind = '{kind}' AND t.value = :{name})"
    )


def where(filters: SessionFilters) -> tuple[str, dict[str, Any]]:
    clauses: list[str] = []
    params: dict[str, Any] = {}
    if filters.service is not None:
        clauses.append("s.service = :service")
        params["service"] = filters.service
    if filters.version is not None:
        clauses.append("s.service_version = :version")
        params["version"] = filters.version
    if filters.check is not None:
        clauses.append(_tag_filter("check", "check"))
        params["check"] = filters.check
    if filters.slice is not None:
        clauses.append(_tag_filter("slice", "slice"))
        params["slice"] = filters.slice
    if filters.joint is not None:
        clauses.append(
            {
                "success": "s.joint_success = 1",
                "failure": "s.joint_success = 0",
                "unscored": "s.joint_success IS NULL",
            }[filters.joint]
        )
    if filters.critical is not None:
        clauses.append("s.critical > 0" if filters.critical else "s.critical = 0")
    if filters.flagged is not None:
        clauses.append(FLAGGED if filters.flagged else f"NOT {FLAGGED}")
    for number, (name, value) in enumerate(sorted(filters.attributes.items())):
        clauses.append(
            "EXISTS (SELECT 1 FROM session_attributes a WHERE a.session_id = s.session_id "
            f"AND a.revision = s.revision AND a.name = :attribute_{number} "
            f"AND a.value = :attribute_value_{number})"
        )
        params[f"attribute_{number}"] = name
        params[f"attribute_value_{number}"] = value
    if filters.since is not None:
        clauses.append("COALESCE(s.ended_at, s.stored_at) >= :since")
        params["since"] = filters.since.timestamp()
    if filters.until is not None:
        clauses.append("COALESCE(s.ended_at, s.stored_at) <= :until")
        params["until"] = filters.until.timestamp()
    return (" WHERE " + " AND ".join(clauses)) if clauses else "", params


class QueueItem(BaseModel):
    summary: SessionSummary
    reason: str
    """`flagged`, or `sample <service> / <slice>` for the stratified sample of unflagged ones."""


class SessionQueries:
    def __init__(self, database: Database) -> None:
        self.db = database

    def list(self, filters: SessionFilters, limit: int = 50, offset: int = 0) -> Page:
        clause, params = where(filters)
        total = self.db.execute(f"SELECT COUNT(*) FROM sessions s{clause}", params)[0][0]
        rows = self.db.execute(
            f"SELECT {summary_columns()} FROM sessions s{clause} "
            "ORDER BY COALESCE(s.ended_at, s.stored_at) DESC, s.session_id, s.revision DESC "
            "LIMIT :limit OFFSET :offset",
            {**params, "limit": limit, "offset": offset},
        )
        return Page(items=self._summaries(rows), total=total, offset=offset, limit=limit)

    def _summaries(self, rows: list[Row]) -> list[SessionSummary]:
        keys = [(row[0], row[1]) for row in rows]
        tags, reviews = self._tags(keys), self._review_counts(keys)
        attributes = self._attributes(keys)
        return [to_summary(row, tags, reviews, attributes) for row in rows]

    def _tags(self, keys: list[Any]) -> dict[Key, dict[str, list[str]]]:
        found: dict[Key, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
        for session_id, revision in keys:
            rows = self.db.execute(
                "SELECT kind, value FROM session_tags WHERE session_id = :session_id "
                "AND revision = :revision ORDER BY kind, value",
                {"session_id": session_id, "revision": revision},
            )
            for kind, value in rows:
                found[(session_id, revision)][kind].append(value)
        return found

    def _attributes(self, keys: list[Any]) -> dict[Key, dict[str, str]]:
        found: dict[Key, dict[str, str]] = {}
        for session_id, revision in keys:
            rows = self.db.execute(
                "SELECT name, value FROM session_attributes WHERE session_id = :session_id "
                "AND revision = :revision ORDER BY name",
                {"session_id": session_id, "revision": revision},
            )
            if rows:
                found[(session_id, revision)] = dict(rows)
        return found

    def _review_counts(self, keys: list[Any]) -> dict[Key, int]:
        counts: dict[Key, int] = {}
        for session_id, revision in keys:
            rows = self.db.execute(
                "SELECT COUNT(*) FROM reviews WHERE session_id = :session_id "
                "AND revision = :revision",
                {"session_id": session_id, "revision": revision},
            )
            counts[(session_id, revision)] = rows[0][0]
        return counts

    def attribute_names(self) -> list[str]:
        """The resource attributes some stored session carries."""
        rows = self.db.execute("SELECT DISTINCT name FROM session_attributes ORDER BY name")
        return [row[0] for row in rows]

    def services(self) -> list[str]:
        return [row[0] for row in self.db.execute("SELECT DISTINCT service FROM sessions")]

    def overview(self) -> list[ServiceOverview]:
        rows = self.db.execute(
            "SELECT service, COUNT(*), "
            "SUM(CASE WHEN score_blob IS NOT NULL THEN 1 ELSE 0 END), "
            "SUM(CASE WHEN joint_success = 1 THEN 1 ELSE 0 END), COUNT(joint_success), "
            "SUM(CASE WHEN critical > 0 THEN 1 ELSE 0 END), "
            f"SUM(CASE WHEN {FLAGGED} THEN 1 ELSE 0 END), SUM(reviewed) "
            "FROM sessions s GROUP BY service ORDER BY service"
        )
        overviews = []
        for service, count, scored, success, judged, critical, flagged, reviewed in rows:
            top = self.db.execute(
                "SELECT t.value, COUNT(*) FROM session_tags t JOIN sessions s "
                "ON s.session_id = t.session_id AND s.revision = t.revision "
                "WHERE s.service = :service AND t.kind = 'check' "
                "GROUP BY t.value ORDER BY COUNT(*) DESC, t.value LIMIT 5",
                {"service": service},
            )
            overviews.append(
                ServiceOverview(
                    service=service,
                    sessions=count,
                    scored=scored,
                    joint_success_rate=success / judged if judged else None,
                    critical_sessions=critical,
                    flagged=flagged,
                    reviewed=reviewed,
                    top_failing_checks=[(check, n) for check, n in top],
                )
            )
        return overviews

    def review_queue(self, per_group: int, limit: int = 100) -> list[QueueItem]:
        """Unreviewed sessions to review: every flagged one (newest first), then up to
        `per_group` unflagged ones per (service, slice), so false negatives are looked for too.
        The sample is a stable pseudo-random pick (a digest of the session id), not the newest."""
        columns = summary_columns()
        flagged = self.db.execute(
            f"SELECT {columns} FROM sessions s WHERE s.reviewed = 0 AND s.score_blob IS NOT NULL "
            f"AND {FLAGGED} ORDER BY COALESCE(s.ended_at, s.stored_at) DESC LIMIT :limit",
            {"limit": limit},
        )
        queue = [QueueItem(summary=item, reason="flagged") for item in self._summaries(flagged)]
        candidates = self.db.execute(
            f"SELECT {columns} FROM sessions s WHERE s.reviewed = 0 AND s.score_blob IS NOT NULL "
            f"AND NOT {FLAGGED} ORDER BY COALESCE(s.ended_at, s.stored_at) DESC LIMIT :n",
            {"n": QUEUE_CANDIDATES},
        )
        groups: dict[tuple[str, str], list[SessionSummary]] = defaultdict(list)
        for item in self._summaries(candidates):
            for slice_name in item.slices or ["none"]:
                groups[(item.service, slice_name)].append(item)
        chosen: set[str] = set()
        for (service, slice_name), items in sorted(groups.items()):
            items.sort(key=lambda item: hashlib.blake2b(item.key.encode()).digest())
            picked = [item for item in items if item.key not in chosen][:per_group]
            for item in picked:
                chosen.add(item.key)
                queue.append(QueueItem(summary=item, reason=f"sample {service} / {slice_name}"))
        return queue[:limit]
