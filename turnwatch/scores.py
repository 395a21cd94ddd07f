"""Score records: what the scorers publish for each session revision (topic `turnwatch.scores`).

Turn-level, trajectory-level and session-level results are kept apart, and critical failures are
listed on their own so that nothing downstream can average them into a quality score. A check
that could not be evaluated is `unscored` with a reason, never a zero. Explanations are built from
contract names, counts, turn indexes and de-identification tokens, never from message text; a
finding's `evidence` holds the same facts as fields, so nothing downstream parses explanations.

Every number in a record is finite: JSON has no NaN or Infinity, and pydantic would write them as
null, turning a valid record into one no reader accepts. The models refuse them when built, so a
bad number fails where it is made, never on the wire.

`schema_version` 1 has grown optional fields since it was first written (`Finding.evidence`,
`ScoreRecord.part`, `ScoreRecord.service_version`): records written before them still validate.
A reader older than a field rejects records that carry it (the models forbid unknown keys), so
upgrade exporters before scorers.
"""

from __future__ import annotations

import math
from datetime import datetime
from enum import StrEnum
from typing import Any, Final, Literal

from pydantic import ConfigDict, Field, field_validator, model_validator

from turnwatch.schema import JsonValue, SparseModel, WireModel

SCORE_SCHEMA_VERSION: Final = 1
MAX_EXPLANATION_CHARS = 400
FINITE = ConfigDict(allow_inf_nan=False)
"""The configuration of every model here: a float field refuses NaN and Infinity."""


class Part(StrEnum):
    """Which results a score record carries (see `ScoreRecord.part`)."""

    COMPLETE = "complete"
    CHECKS = "checks"
    JUDGED = "judged"


class Level(StrEnum):
    TURN = "turn"
    TRAJECTORY = "trajectory"
    SESSION = "session"


class Severity(StrEnum):
    INFO = "info"
    WARNING = "warning"
    ERROR = "error"
    CRITICAL = "critical"


class Status(StrEnum):
    PASSED = "passed"
    FAILED = "failed"
    UNSCORED = "unscored"


class Slice(StrEnum):
    TOOL_FAILURE = "tool-failure"
    REVISION = "revision"
    LONG_HORIZON = "long-horizon"
    HANDOFF = "handoff"
    UNANSWERABLE = "unanswerable"
    ADVERSARIAL_STATE = "adversarial-state"


class Evidence(SparseModel):
    """What a finding rests on, in de-identified values only: ids and names from the session and
    the contract, pseudonym tokens, turn indexes and numbers; never message text or argument
    values. Each check fills the fields it knows; unset fields are left out of the JSON."""

    model_config = FINITE

    related_turn_index: int | None = Field(
        default=None,
        description="Another turn the finding points at: where the user gave the fact, the "
        "answer repeated, the failed tool call, the hand-over.",
    )
    tool_call_id: str | None = None
    tool_name: str | None = None
    rule: str | None = Field(
        default=None,
        description="The contract element involved: a forbidden action or required fact id, "
        "`tools.<name>.approval`, `budgets.<field>`, `success`.",
    )
    argument_path: str | None = Field(
        default=None, description="JSON path into the tool call's arguments, e.g. $['order_id']."
    )
    schema_keyword: str | None = Field(
        default=None, description="The JSON Schema keyword the arguments fail."
    )
    token: str | None = Field(
        default=None, description="The pseudonym token involved, e.g. <EMAIL_ADDRESS_3f9a1c2b>."
    )
    entity: str | None = Field(default=None, description="A token type, e.g. EMAIL_ADDRESS.")
    owner: str | None = Field(
        default=None, description="The pseudonymous user id that supplied `token`."
    )
    replaced_by: str | None = Field(
        default=None, description="The token the user replaced `token` with."
    )
    measured: float | None = Field(default=None, description="The measure compared: a total.")
    limit: float | None = Field(default=None, description="What it was compared with.")


class Finding(WireModel):
    model_config = FINITE

    check: str
    turn_index: int | None = Field(description="Turn where the check failed; None = whole session.")
    severity: Severity
    explanation: str = Field(max_length=MAX_EXPLANATION_CHARS)
    evidence: Evidence = Field(default_factory=Evidence)


class CheckResult(WireModel):
    model_config = FINITE

    check: str
    status: Status
    value: float | None = Field(
        default=None, description="The check's measure when it has one (a count, a 0/1 outcome)."
    )
    findings: list[Finding] = Field(default_factory=list)
    unscored_reason: str | None = None

    @model_validator(mode="after")
    def _consistent(self) -> CheckResult:
        if (self.status is Status.UNSCORED) != (self.unscored_reason is not None):
            raise ValueError("unscored_reason is set exactly when status is unscored")
        if self.status is Status.FAILED and not self.findings:
            raise ValueError("a failed check names at least one finding")
        return self


class Score(WireModel):
    """A graded metric (judge metrics): value None means not scored, with the reason."""

    model_config = FINITE

    name: str
    value: float | None
    unscored_reason: str | None = None
    explanation: str | None = Field(default=None, max_length=MAX_EXPLANATION_CHARS)
    metadata: dict[str, JsonValue] = Field(default_factory=dict)

    @field_validator("metadata")
    @classmethod
    def _finite_metadata(cls, metadata: dict[str, JsonValue]) -> dict[str, JsonValue]:
        if not _finite(metadata):
            raise ValueError("metadata holds a number that is not finite")
        return metadata

    @model_validator(mode="after")
    def _reason_when_unscored(self) -> Score:
        if (self.value is None) != (self.unscored_reason is not None):
            raise ValueError("unscored_reason is set exactly when value is None")
        return self


class JointSuccess(WireModel):
    """Every critical condition holds; None when one could not be evaluated and none failed."""

    value: bool | None
    conditions: dict[str, bool | None]
    unscored_reason: str | None = None


class BrokenTransition(WireModel):
    turn_index: int
    check: str


class SliceTag(WireModel):
    slice: Slice
    turn_index: int | None
    evidence: str = Field(max_length=MAX_EXPLANATION_CHARS)


class BudgetUsage(WireModel):
    model_config = FINITE

    turns: int
    user_turns: int
    tool_calls: int
    latency_ms: float = Field(description="Model call latency plus tool durations.")
    max_turn_latency_ms: float | None
    input_tokens: int
    output_tokens: int
    cost_usd: float | None
    cost_unscored_reason: str | None = None


class ContractRef(WireModel):
    id: str
    version: str


class ScoreRecord(WireModel):
    model_config = FINITE

    schema_version: Literal[1] = SCORE_SCHEMA_VERSION
    session_id: str
    revision: int = Field(ge=1)
    service: str
    service_version: str | None = Field(
        default=None,
        description="The chatbot's `service.version` as the session recorded it: what release "
        "gates and canary verdicts compare.",
    )
    contract: ContractRef | None = Field(description="None: no contract, generic checks only.")
    scored_at: datetime
    session_ended_at: datetime | None = Field(
        default=None, description="The session's last span: the start of end-to-end latency."
    )
    turn_level: list[CheckResult] = Field(default_factory=list)
    trajectory_level: list[CheckResult] = Field(default_factory=list)
    session_level: list[CheckResult] = Field(default_factory=list)
    critical_failures: list[Finding] = Field(default_factory=list)
    joint_success: JointSuccess
    first_broken_transition: BrokenTransition | None = None
    slices: list[SliceTag] = Field(default_factory=list)
    budgets: BudgetUsage
    metrics: list[Score] = Field(
        default_factory=list, description="Graded (judge) metrics; filled by later stages."
    )
    part: Part = Field(
        default=Part.COMPLETE,
        description="complete: the checks and the judge metrics (if any) in one record; checks: "
        "the deterministic results, published without waiting for the judge, the judge metrics "
        "to follow; judged: the same checks again with the judge metrics filled in.",
    )

    @model_validator(mode="after")
    def _metrics_in_their_part(self) -> ScoreRecord:
        if self.part is Part.CHECKS and self.metrics:
            raise ValueError("a checks part carries no judge metrics (they follow as judged)")
        return self

    def results(self) -> list[CheckResult]:
        return [*self.turn_level, *self.trajectory_level, *self.session_level]

    def delivery(self) -> str:
        """What tells this record apart from the other records of its session for
        deduplication: the revision, and the part when the revision comes in two."""
        if self.part is Part.COMPLETE:
            return str(self.revision)
        return f"{self.revision}:{self.part.value}"


def _finite(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(_finite(item) for item in value.values())
    if isinstance(value, list | tuple):
        return all(_finite(item) for item in value)
    return True
