"""The answers judges must give, one schema per prompt.

Verdicts are pinned to enums (a free string let "maybe" through elsewhere). Unknown keys are
ignored: models add them. Reasons are optional and never copied into a Score (they may quote
message text); scores explain themselves with counts and turn indexes.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

YesNo = Literal["yes", "no"]


class WindowVerdict(BaseModel):
    window: int
    verdict: YesNo
    reason: str | None = None


class RelevancyVerdicts(BaseModel):
    verdicts: list[WindowVerdict]


class OutOfCharacter(BaseModel):
    turn: int
    reason: str | None = None


class RoleVerdicts(BaseModel):
    out_of_character: list[OutOfCharacter]


class ExtractedFact(BaseModel):
    turn: int
    fact: str = Field(min_length=1, max_length=300)


class ExtractedFacts(BaseModel):
    facts: list[ExtractedFact]


class Attrition(BaseModel):
    turn: int
    fact: int | None = Field(default=None, description="Number of the fact forgotten.")
    reason: str | None = None


class AttritionVerdicts(BaseModel):
    attritions: list[Attrition]


class Intentions(BaseModel):
    intentions: list[str]


class IntentionVerdict(BaseModel):
    intention: int
    verdict: YesNo
    reason: str | None = None


class SatisfactionVerdicts(BaseModel):
    verdicts: list[IntentionVerdict]


class EvaluationSteps(BaseModel):
    steps: list[str] = Field(min_length=1, max_length=10)


class GEvalScore(BaseModel):
    score: int = Field(ge=0, le=10)
    reason: str | None = None
