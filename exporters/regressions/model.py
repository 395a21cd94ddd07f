"""The regression case as a pydantic model: the dataset schema of the multi-turn evaluation guide
(conversation_id, dataset_version, scenario, slice, initial_state, turns, required_facts,
forbidden_actions, success, critical_failures, rubric_version) plus what replay and triage need:
each turn's tool calls with their recorded results, provenance, findings and occurrences.

`regression-case.schema.json` is generated from `Case` (`schema.py`). The JSON layout is the one
case files have had since `case_format` 1: fields added since are optional, so files written by
an older turnwatch load unchanged; `case_format` changes only when a field is removed or changes
meaning. Content is de-identified (PII replaced by tokens such as `<EMAIL_ADDRESS_3f9a1c2b>`).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Literal

from pydantic import Field, PlainSerializer

from turnwatch.schema import CloseReason, JsonValue, Role, SamplingReason, SparseModel, WireModel
from turnwatch.scores import BudgetUsage, ContractRef, Evidence, JointSuccess, Level, Severity

CASE_FORMAT = 1


def iso(moment: datetime) -> str:
    """As case files have always written times: ISO 8601 in UTC with an explicit +00:00."""
    return moment.astimezone(UTC).isoformat()


Timestamp = Annotated[datetime, PlainSerializer(iso, when_used="json")]
Names = list[Annotated[str, Field(min_length=1)]]
TurnId = Annotated[int, Field(ge=1, description="Turn number, counted from 1.")]


class InitialState(WireModel):
    user_id: str | None = Field(description="The pseudonymous user of the conversation.")
    system_instructions: list[str]
    known_token_owners: dict[str, str] = Field(
        default_factory=dict,
        description="Other users' tokens the conversation disclosed -> their pseudonymous "
        "owners; replay seeds the disclosure check with them.",
    )


class CaseToolCall(WireModel):
    id: str | None
    name: str
    arguments: JsonValue
    result: JsonValue
    error: str | None
    started_at: Timestamp | None = None
    duration_ms: float | None = None


class CaseTurn(SparseModel):
    written_when_none = frozenset({"content"})

    turn_id: TurnId
    role: Role
    content: str | None
    facts_revealed: Names | None = Field(
        default=None, description="Required facts this turn brought in (with a contract)."
    )
    tool_calls: list[CaseToolCall] | None = None
    tool_call_id: str | None = None
    name: str | None = None
    started_at: Timestamp | None = None
    latency_ms: float | None = None
    model: str | None = None
    trace_id: str | None = None
    redacted: bool | None = None
    truncated: bool | None = None


class CaseSignature(WireModel):
    """What makes two incidents the same case: service, failing check, first broken transition."""

    service: str
    check: str
    transition: str


class Occurrence(WireModel):
    session_id: str
    revision: int = Field(ge=1)
    seen_at: Timestamp
    reasons: list[str]
    trace_ids: list[str]


class Policy(WireModel):
    contract_id: str
    contract_version: str


class ToolAttempt(WireModel):
    id: str | None
    name: str
    turn_id: TurnId
    started_at: Timestamp | None
    duration_ms: float | None = None
    failed: bool


class Sampling(WireModel):
    reason: SamplingReason
    rate: float


class Provenance(WireModel):
    service: str
    service_version: str | None
    models: list[str]
    providers: list[str] = Field(default_factory=list)
    agent_name: str | None = None
    agent_version: str | None = None
    prompt_sha256: str | None = Field(
        pattern=r"^[0-9a-f]{64}$", description="Digest of the (de-identified) system prompt."
    )
    tools: list[str]
    policy: Policy | None
    turnwatch_version: str
    session_id: str
    revision: int = Field(ge=1)
    started_at: Timestamp
    ended_at: Timestamp
    trace_ids: list[str]
    tool_attempts: list[ToolAttempt]
    sampling: Sampling | None = None
    dialects: list[str] = Field(default_factory=list)
    close_reason: CloseReason | None = None
    incomplete: bool = False
    truncated: bool = False


class CaseFinding(WireModel):
    check: str
    turn_id: TurnId | None
    severity: Severity
    explanation: str
    evidence: Evidence = Field(default_factory=Evidence)


class FailedCheck(WireModel):
    check: str
    level: Level
    value: float | None = None
    findings: list[CaseFinding] = Field(min_length=1)


class UnscoredCheck(WireModel):
    check: str
    level: Level
    reason: str | None


class MetricValue(WireModel):
    name: str
    value: float | None
    unscored_reason: str | None = None


class BrokenAt(WireModel):
    turn_id: TurnId
    check: str


class Findings(WireModel):
    reasons: list[str] = Field(min_length=1, description="Why the session was flagged.")
    scored_at: Timestamp
    contract: ContractRef | None = None
    joint_success: JointSuccess
    first_broken_transition: BrokenAt | None
    critical_failures: list[CaseFinding]
    failed_checks: list[FailedCheck]
    unscored_checks: list[UnscoredCheck] = Field(default_factory=list)
    metrics: list[MetricValue]
    budgets: BudgetUsage | None = None


class Case(WireModel):
    """A flagged production session as a versioned conversation regression."""

    case_format: Literal[1] = CASE_FORMAT
    case_id: str = Field(pattern=r"^rc-[0-9a-f]{16}$")
    conversation_id: str = Field(min_length=1)
    dataset_version: str = Field(min_length=1)
    scenario: str = Field(min_length=1)
    slice: list[str] = Field(json_schema_extra={"uniqueItems": True})
    initial_state: InitialState
    turns: list[CaseTurn]
    required_facts: Names
    forbidden_actions: Names
    success: dict[str, JsonValue] = Field(
        description="The contract's success condition as written; empty without a contract."
    )
    critical_failures: Names
    rubric_version: str = Field(min_length=1)
    chatbot_role: str | None = None
    signature: CaseSignature
    occurrence_count: int = Field(ge=1)
    first_seen: Timestamp
    last_seen: Timestamp
    occurrences: list[Occurrence] = Field(min_length=1)
    provenance: Provenance
    findings: Findings

    def to_json(self) -> dict[str, JsonValue]:
        """The case as its file holds it."""
        return self.model_dump(mode="json")

    def summary(self) -> CaseSummary:
        return CaseSummary(
            id=self.case_id,
            service=self.signature.service,
            check=self.signature.check,
            transition=self.signature.transition,
            slices=list(self.slice),
            reasons=list(self.findings.reasons),
            scenario=self.scenario,
            rubric_version=self.rubric_version,
            dataset_version=self.dataset_version,
            occurrence_count=self.occurrence_count,
            first_seen=self.first_seen,
            last_seen=self.last_seen,
        )


class CaseSummary(WireModel):
    """What listing a case needs (`/api/incidents` items, `regressions list`): no transcript."""

    id: str
    service: str
    check: str = Field(description="The signature's check; several critical ones joined by +.")
    transition: str
    slices: list[str]
    reasons: list[str]
    scenario: str
    rubric_version: str
    dataset_version: str
    occurrence_count: int
    first_seen: Timestamp
    last_seen: Timestamp

    def to_json(self) -> dict[str, JsonValue]:
        return self.model_dump(mode="json")
