"""What the session store hands out: summaries for lists, whole stored sessions, filters."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel, Field, field_validator

from turnwatch.schema import MAX_RESOURCE_ATTRIBUTES, Session, resource_attribute_key
from turnwatch.scores import ScoreRecord

JointOutcome = Literal["success", "failure", "unscored"]


def from_epoch(value: float | None) -> datetime | None:
    return None if value is None else datetime.fromtimestamp(value, UTC)


def key_value_pairs(text: str) -> list[tuple[str, str]]:
    """`key=value,key=value` as stripped (key, value) pairs, in order (values cannot hold a
    comma); ValueError naming a pair without `=` or a key."""
    pairs = []
    for pair in (item.strip() for item in text.split(",") if item.strip()):
        key, equals, value = (part.strip() for part in pair.partition("="))
        if not equals or not key:
            raise ValueError(f"{pair!r} is not key=value")
        pairs.append((key, value))
    return pairs


class SessionFilters(BaseModel):
    """Every field narrows the list; None leaves it open. Times compare with the session's end."""

    service: str | None = None
    version: str | None = Field(default=None, description="The chatbot's service version.")
    check: str | None = Field(default=None, description="A check that failed.")
    slice: str | None = None
    joint: JointOutcome | None = None
    critical: bool | None = None
    flagged: bool | None = None
    since: datetime | None = None
    until: datetime | None = None
    attributes: dict[str, str] = Field(
        default_factory=dict,
        max_length=MAX_RESOURCE_ATTRIBUTES,
        description="Resource attributes the session carries, each with exactly this value.",
    )

    @field_validator("attributes")
    @classmethod
    def _attribute_names(cls, value: dict[str, str]) -> dict[str, str]:
        for name, text in value.items():
            resource_attribute_key(name)
            if not text:
                raise ValueError(f"{name}: empty value")
        return value

    @field_validator("since", "until")
    @classmethod
    def _utc_unless_said(cls, value: datetime | None) -> datetime | None:
        # A browser's datetime-local field sends no offset: stored times are UTC.
        return value.replace(tzinfo=UTC) if value and value.tzinfo is None else value


class SessionSummary(BaseModel):
    session_id: str
    revision: int
    service: str
    service_version: str | None
    ended_at: datetime | None
    turns: int | None
    scored: bool
    joint_success: bool | None
    critical: int
    flagged: bool
    reasons: list[str]
    failed_checks: list[str]
    slices: list[str]
    reviews: int
    attributes: dict[str, str] = Field(
        default_factory=dict, description="The session's kept resource attributes."
    )

    @property
    def key(self) -> str:
        return f"{self.session_id}/{self.revision}"


class Page(BaseModel):
    items: list[SessionSummary]
    total: int
    offset: int
    limit: int

    @property
    def next_offset(self) -> int | None:
        following = self.offset + self.limit
        return following if following < self.total else None


class JudgeScore(BaseModel):
    """One judge's value for one metric of one session revision (several judges can score it)."""

    judge: str
    metric: str
    value: float | None
    turns: list[int] = Field(default_factory=list, description="Turns the judge flagged.")


class StoredSession(BaseModel):
    summary: SessionSummary
    session: Session | None = Field(description="None while only the score record arrived.")
    score: ScoreRecord | None = Field(description="None until the score record arrives.")
    judges: list[JudgeScore] = Field(default_factory=list)


class ServiceOverview(BaseModel):
    service: str
    sessions: int
    scored: int
    joint_success_rate: float | None
    critical_sessions: int
    flagged: int
    reviewed: int
    top_failing_checks: list[tuple[str, int]]
