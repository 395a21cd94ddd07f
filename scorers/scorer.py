"""One scorer shape for deterministic checks and judge metrics, after Inspect AI's scorers.

A scorer is a plain callable from a `Context` (the de-identified session, its one-pass
transcript, the service's contract or None, the scorer configuration) to one `Result`; a scorer
that calls out (a judge metric) returns it awaitable. A result holds a value or, explicitly, the
reason it is unscored (never a zero), an explanation, findings (what failed, each with
de-identified `Evidence`) and metadata. A scorer never decides criticality (the contract does) and
never raises to say "cannot tell": it answers `unscored(reason)`.

The runner treats every scorer alike: `run_scorer` / `run_scorer_async` call it, and a scorer that
raises becomes unscored ("check raised KeyError") while the others still run; `check_result` and
`metric_score` name the result after its scorer and turn it into the score record's wire models.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from turnwatch.scorers.config import ScorerConfig
from turnwatch.scorers.contract import Contract
from turnwatch.scorers.transcript import Call, Transcript

from turnwatch.schema import JsonValue, Session
from turnwatch.scores import (
    MAX_EXPLANATION_CHARS,
    CheckResult,
    Evidence,
    Finding,
    Level,
    Score,
    Severity,
    Status,
)

log = logging.getLogger("turnwatch.scorers")

V = TypeVar("V")


@dataclass(frozen=True, slots=True)
class Draft:
    """A finding before the runner names its check and applies the contract's criticality."""

    turn_index: int | None
    explanation: str
    severity: Severity = Severity.ERROR
    evidence: Evidence = field(default_factory=Evidence)


def call_evidence(call: Call, rule: str | None = None, **more: Any) -> Evidence:
    """Evidence naming a tool call (id and tool), the contract rule, and what else is known."""
    return Evidence(tool_call_id=call.call.id, tool_name=call.name, rule=rule, **more)


@dataclass(frozen=True, slots=True)
class Result:
    value: float | None = None
    """The measure (a count, a 0/1 outcome, a judge's score); None for a check without one."""
    unscored_reason: str | None = None
    explanation: str | None = None
    findings: Sequence[Draft] = ()
    metadata: Mapping[str, JsonValue] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.unscored_reason is not None and (self.value is not None or self.findings):
            raise ValueError("an unscored result has neither a value nor findings")


def unscored(reason: str, **metadata: JsonValue) -> Result:
    return Result(unscored_reason=reason, metadata=metadata)


def counted(findings: Sequence[Draft]) -> Result:
    """The common check result: its findings, valued by how many there are."""
    return Result(value=len(findings), findings=findings)


@dataclass(frozen=True, slots=True)
class Context:
    session: Session
    transcript: Transcript
    contract: Contract | None
    config: ScorerConfig
    _views: dict[Any, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def of(
        cls, session: Session, contract: Contract | None, config: ScorerConfig | None = None
    ) -> Context:
        return cls(session, Transcript(session), contract, config or ScorerConfig())

    def view(self, key: Any, build: Callable[[], V]) -> V:
        """A derived view of the session several scorers share, built once per context."""
        if key not in self._views:
            self._views[key] = build()
        return self._views[key]


ScoreFn = Callable[[Context], Result | Awaitable[Result]]


@dataclass(frozen=True, slots=True)
class ScorerSpec:
    name: str
    run: ScoreFn
    level: Level = Level.SESSION
    needs_contract: bool = False


def run_scorer(spec: ScorerSpec, ctx: Context, kind: str = "check") -> Result:
    if spec.needs_contract and ctx.contract is None:
        return unscored(f"no contract for service {ctx.session.service!r}")
    try:
        result = spec.run(ctx)
    except Exception as exc:  # a broken scorer must not sink the other scorers' results
        return _raised(spec, ctx, kind, exc, {})
    if not isinstance(result, Result):
        if isinstance(result, Coroutine):
            result.close()  # never awaited: close it rather than leave a warning behind
        raise TypeError(f"{spec.name} is awaitable: run it with run_scorer_async")
    return result


async def run_scorer_async(
    spec: ScorerSpec, ctx: Context, kind: str = "metric", **metadata: JsonValue
) -> Result:
    """`run_scorer` for scorers that may be awaitable; `metadata` labels an unscored answer."""
    if spec.needs_contract and ctx.contract is None:
        return unscored(f"no contract for service {ctx.session.service!r}", **metadata)
    try:
        result = spec.run(ctx)
        return result if isinstance(result, Result) else await result
    except Exception as exc:
        return _raised(spec, ctx, kind, exc, metadata)


def _raised(
    spec: ScorerSpec, ctx: Context, kind: str, exc: Exception, metadata: Mapping[str, JsonValue]
) -> Result:
    log.warning(
        f"{kind} failed",
        extra={"scorer": spec.name, "session_id": ctx.session.session_id,
               "error": type(exc).__name__},
    )  # fmt: skip
    return Result(unscored_reason=f"{kind} raised {type(exc).__name__}", metadata=metadata)


def check_result(
    name: str, result: Result, critical: bool, severity: Severity | None = None
) -> CheckResult:
    """`critical` (the contract's `critical`) outranks `severity` (its `severity` override)."""
    if result.unscored_reason is not None:
        return CheckResult(
            check=name, status=Status.UNSCORED, unscored_reason=result.unscored_reason
        )
    findings = [
        Finding(
            check=name,
            turn_index=draft.turn_index,
            severity=Severity.CRITICAL if critical else severity or draft.severity,
            explanation=draft.explanation,
            evidence=draft.evidence,
        )
        for draft in result.findings
    ]
    return CheckResult(
        check=name,
        status=Status.FAILED if findings else Status.PASSED,
        value=result.value,
        findings=findings,
    )


def metric_score(name: str, result: Result) -> Score:
    explanation = result.explanation
    return Score(
        name=name,
        value=result.value if result.unscored_reason is None else None,
        unscored_reason=result.unscored_reason,
        explanation=explanation[:MAX_EXPLANATION_CHARS] if explanation is not None else None,
        metadata=dict(result.metadata),
    )
