"""What every check shares: its input (`Context`) and its two possible answers.

A check is a plain callable `Context -> Verdict | Unscored`. It never decides severity escalation
or criticality (the contract does, in the runner) and never raises to signal "cannot tell": it
answers `Unscored` with a reason, which the record keeps apart from a pass or a failure.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from turnwatch.scorers.config import ScorerConfig
from turnwatch.scorers.contract import CheckName, Contract
from turnwatch.scorers.transcript import Transcript

from turnwatch.schema import Session
from turnwatch.scores import Level, Severity


@dataclass(frozen=True, slots=True)
class Draft:
    """A finding before the runner names its check and applies the contract's criticality."""

    turn_index: int | None
    explanation: str
    severity: Severity = Severity.ERROR


@dataclass(frozen=True, slots=True)
class Verdict:
    drafts: list[Draft] = field(default_factory=list)
    value: float | None = None


@dataclass(frozen=True, slots=True)
class Unscored:
    reason: str


@dataclass(frozen=True, slots=True)
class Context:
    session: Session
    transcript: Transcript
    contract: Contract | None
    config: ScorerConfig


CheckFn = Callable[[Context], Verdict | Unscored]


@dataclass(frozen=True, slots=True)
class CheckSpec:
    name: CheckName
    level: Level
    run: CheckFn
    needs_contract: bool = False
