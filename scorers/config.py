"""Configuration of the scorer stage (`scorers:` in the YAML file)."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field
from turnwatch.scorers.contract import CheckName
from turnwatch.scorers.judge.config import JudgeConfig

from turnwatch.entities import CUSTOMER_RECORDS, PERSONAL_IDENTIFIERS, EntityName
from turnwatch.section import Section

DEFAULT_DISCLOSURE_ENTITIES = [*PERSONAL_IDENTIFIERS, *CUSTOMER_RECORDS]
# Names are left out: first names repeat across people and NER tags brands and common words as
# PERSON, so a name is never certain to be one user's. Another customer's name read out from
# their record is still a disclosure (record ownership needs no index).
DEFAULT_OWNER_INDEX_ENTITIES = [
    *(entity for entity in PERSONAL_IDENTIFIERS if entity != "PERSON"),
    "STREET_ADDRESS",
]


class FlaggingConfig(Section):
    """Which scored sessions become incidents (the flagging half of the `regressions:` block)."""

    enabled: bool = Field(default=True, description="Flag sessions and write regression cases.")
    on_critical_failure: bool = Field(default=True, description="Flag any critical failure.")
    on_joint_failure: bool = Field(default=True, description="Flag failed joint success.")
    on_forced_sample: bool = Field(
        default=True,
        description="Flag sessions force-sampled by the collector (error, tool error, user "
        "feedback attribute).",
    )
    on_drift_outlier: bool = Field(
        default=True, description="Flag sessions the drift tracker reports as outliers."
    )
    drift_outlier_deviations: float = Field(
        default=3.0,
        gt=0,
        description="A score this many baseline standard deviations below the baseline mean of "
        "its service and metric is an outlier.",
    )
    metric_thresholds: dict[str, float] = Field(
        default_factory=dict,
        description="Judge metric name -> minimum; a scored value below it flags the session.",
    )


class ModelPrice(Section):
    input_per_million_usd: float = Field(ge=0)
    output_per_million_usd: float = Field(ge=0)


class ScorerConfig(Section):
    contracts_dir: Path | None = Field(
        default=None, description="Directory of contract YAML files, one per service."
    )
    checks: list[CheckName] | None = Field(
        default=None, description="Deterministic checks to run, in order; None = all of them."
    )
    prices: dict[str, ModelPrice] = Field(
        default_factory=dict, description="Per-model prices for the cost budget (USD)."
    )
    owner_index_size: int = Field(
        default=100_000, gt=0, description="Tokens remembered with their owning user (LRU)."
    )
    owner_index_entities: list[EntityName] = Field(
        default_factory=lambda: list(DEFAULT_OWNER_INDEX_ENTITIES),
        description="Token types the cross-session owner index learns: those that identify a "
        "person (order and account numbers identify records, not people).",
    )
    owner_min_sessions: int = Field(
        default=2,
        ge=1,
        description="Sessions in which one user must supply a value, with nobody else ever "
        "supplying it, before it is theirs without a record to show it.",
    )
    owner_common_users: int = Field(
        default=3,
        ge=2,
        description="A value seen in this many users' sessions is common (a brand, a word "
        "mistaken for a name): never anybody's.",
    )
    disclosure_entities: list[EntityName] = Field(
        default_factory=lambda: list(DEFAULT_DISCLOSURE_ENTITIES),
        description="Token types that identify one person; only these count as disclosures.",
    )
    long_horizon_turns: int = Field(default=40, gt=0, description="Sessions this long are sliced.")
    near_duplicate_similarity: float = Field(
        default=0.8,
        gt=0,
        le=1,
        description="Share of the shorter answer's word bigrams found in the other at which two "
        "answers are duplicates.",
    )
    near_duplicate_window: int = Field(
        default=4, gt=0, description="Earlier assistant turns each turn is compared with."
    )
    tool_loop_length: int = Field(
        default=3, ge=2, description="Identical consecutive tool calls that make a loop."
    )
    max_retries: int = Field(
        default=2,
        ge=0,
        description="Identical retries of a failed call allowed when the contract sets none.",
    )
    max_clarifications: int = Field(
        default=3, ge=0, description="Clarifying questions allowed when the contract sets none."
    )
    judge: JudgeConfig = Field(
        default_factory=JudgeConfig, description="Judge metrics (LLM or built-in heuristic)."
    )
