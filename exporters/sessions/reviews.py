"""Reviews: a person's labels on one scored session revision, kept as the reference set.

A review marks each of turnwatch's findings confirmed or a false positive, names the defects
turnwatch missed, labels the judge metrics (pass/fail per turn for turn relevancy and role
adherence, per session for completeness and retention), tags failure slices and carries a note.
One review per (session, revision, reviewer): saving again replaces that reviewer's review.
Reviews travel as JSON lines (`Review` per line) so labels can come from another tool.
"""

from __future__ import annotations

import zlib
from datetime import datetime
from enum import StrEnum
from typing import IO, Literal

from pydantic import Field, ValidationError
from turnwatch.exporters.sessions.database import Database

from turnwatch.schema import WireModel

REVIEW_SCHEMA_VERSION = 1
PER_TURN_METRICS = ("turn_relevancy", "role_adherence")
PER_SESSION_METRICS = ("conversation_completeness", "knowledge_retention")
REVIEW_SLICES = (
    "recollection",
    "revision",
    "refinement",
    "reference-resolution",
    "contradiction",
    "topic-return",
    "tool-failure",
    "handoff",
    "unanswerable",
    "long-horizon",
    "adversarial-state",
)
"""The evaluation guide's failure slices (turnwatch tags six of them by itself)."""


class Verdict(StrEnum):
    CONFIRMED = "confirmed"
    FALSE_POSITIVE = "false_positive"


class FindingLabel(WireModel):
    check: str
    turn_index: int | None
    verdict: Verdict


class MissedDefect(WireModel):
    """A defect turnwatch did not report: the check that should have fired, and where."""

    check: str
    turn_index: int | None = None


class MetricLabel(WireModel):
    metric: str
    turn_index: int | None = Field(description="None: the whole session.")
    label: Literal["pass", "fail"]


class Review(WireModel):
    schema_version: Literal[1] = REVIEW_SCHEMA_VERSION
    session_id: str
    revision: int = Field(ge=1)
    reviewer: str = Field(min_length=1, max_length=200)
    reviewed_at: datetime
    findings: list[FindingLabel] = Field(default_factory=list)
    missed: list[MissedDefect] = Field(default_factory=list)
    metrics: list[MetricLabel] = Field(default_factory=list)
    slices: list[str] = Field(default_factory=list)
    note: str | None = Field(default=None, max_length=4000)

    def verdict(self, check: str, turn_index: int | None) -> Verdict | None:
        for label in self.findings:
            if label.check == check and label.turn_index == turn_index:
                return label.verdict
        return None

    def metric_label(self, metric: str, turn_index: int | None) -> str | None:
        for label in self.metrics:
            if label.metric == metric and label.turn_index == turn_index:
                return label.label
        return None


class BadReviewLine(ValueError):
    """A JSONL line that is not a review; names the line and the first failing field."""


def read_jsonl(handle: IO[str]) -> list[Review]:
    """Every review of a JSONL stream, or BadReviewLine for the first bad line (none taken)."""
    reviews = []
    for number, line in enumerate(handle, start=1):
        if not line.strip():
            continue
        try:
            reviews.append(Review.model_validate_json(line))
        except ValidationError as exc:
            error = exc.errors(include_input=False)[0]
            where = "/".join(str(part) for part in error["loc"]) or "(line)"
            raise BadReviewLine(f"line {number}: {where}: {error['msg']}") from None
    return reviews


def write_jsonl(reviews: list[Review], handle: IO[str]) -> None:
    for review in reviews:
        handle.write(review.model_dump_json() + "\n")


class ReviewTable:
    """The store's reviews (mixed into SessionStore)."""

    db: Database

    def put_review(self, review: Review) -> None:
        key = {"session_id": review.session_id, "revision": review.revision}
        with self.db.transaction():
            self.db.execute(
                "INSERT INTO reviews (session_id, revision, reviewer, reviewed_at, review_blob) "
                "VALUES (:session_id, :revision, :reviewer, :reviewed_at, :blob) "
                "ON CONFLICT (session_id, revision, reviewer) DO UPDATE SET "
                "reviewed_at = excluded.reviewed_at, review_blob = excluded.review_blob",
                {
                    **key,
                    "reviewer": review.reviewer,
                    "reviewed_at": review.reviewed_at.timestamp(),
                    "blob": zlib.compress(review.model_dump_json().encode()),
                },
            )
            self.db.execute(
                "UPDATE sessions SET reviewed = 1 "
                "WHERE session_id = :session_id AND revision = :revision",
                key,
            )

    def reviews(self, session_id: str | None = None, revision: int | None = None) -> list[Review]:
        clauses, params = [], {}
        if session_id is not None:
            clauses.append("session_id = :session_id")
            params["session_id"] = session_id
        if revision is not None:
            clauses.append("revision = :revision")
            params["revision"] = revision
        clause = (" WHERE " + " AND ".join(clauses)) if clauses else ""
        rows = self.db.execute(
            f"SELECT review_blob FROM reviews{clause} "
            "ORDER BY session_id, revision, reviewed_at, reviewer",
            params,
        )
        return [Review.model_validate_json(zlib.decompress(bytes(row[0]))) for row in rows]
