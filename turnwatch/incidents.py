"""Incident records: the sessions the scorer flagged (topic `turnwatch.incidents`).

An incident carries the de-identified session, its score record and the reasons it was flagged:
the exporter that turns incidents into replayable regression cases needs the transcript, which the
score record alone does not hold. The session id, revision and service are repeated at the top
(validated against the session) so a consumer can key, route and deduplicate without reading the
transcript; the layout is the one incidents have had on the wire since `schema_version` 1.
"""

from __future__ import annotations

from typing import Final, Literal

from pydantic import Field, model_validator

from turnwatch.schema import Session, WireModel
from turnwatch.scores import SCORE_SCHEMA_VERSION, ScoreRecord

INCIDENT_SCHEMA_VERSION: Final = SCORE_SCHEMA_VERSION


class Incident(WireModel):
    schema_version: Literal[1] = INCIDENT_SCHEMA_VERSION
    session_id: str
    revision: int = Field(ge=1)
    service: str
    reasons: list[str] = Field(
        min_length=1,
        description="Why it was flagged: short codes (critical_failure, metric_below:NAME, ...).",
    )
    score: ScoreRecord
    session: Session

    @classmethod
    def of(cls, session: Session, score: ScoreRecord, reasons: list[str]) -> Incident:
        return cls(
            session_id=session.session_id,
            revision=session.revision,
            service=session.service,
            reasons=reasons,
            score=score,
            session=session,
        )

    @model_validator(mode="after")
    def _one_session_revision(self) -> Incident:
        ids = (self.session_id, self.revision, self.service)
        if ids != (self.session.session_id, self.session.revision, self.session.service):
            raise ValueError("session_id, revision and service are those of the session")
        if (self.score.session_id, self.score.revision) != ids[:2]:
            raise ValueError("the score record is the session revision's own")
        return self
