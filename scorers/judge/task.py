"""What a metric asks a judge, and what comes back.

A metric builds a `Task` (prompt, rendered input, answer schema, and the same input as data for the
heuristic judge) and hands it to whichever `Judge` is configured; it never knows which one answers.
A judge returns an `Answer` or `Unjudged` with a reason: never a guessed verdict.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from pydantic import BaseModel
from turnwatch.scorers.judge.prompt import Prompt

T = TypeVar("T", bound=BaseModel)


@dataclass(frozen=True, slots=True)
class Task(Generic[T]):
    metric: str
    prompt: Prompt
    values: dict[str, str]
    schema: type[T]
    data: Any = None
    heuristic: Callable[[Any], T] | None = None
    logprobs: bool = False

    def text(self) -> str:
        return self.prompt.render(**self.values)


@dataclass(frozen=True, slots=True)
class TokenLogprob:
    token: str
    top: dict[str, float]  # alternative token -> logprob


@dataclass(frozen=True, slots=True)
class Answer(Generic[T]):
    value: T
    logprobs: list[TokenLogprob] | None = None
    cached: bool = False


@dataclass(frozen=True, slots=True)
class Unjudged:
    """No verdict; `reason` is a short fixed label (a metric label, and the Score's reason)."""

    reason: str
    detail: str = ""


@dataclass(slots=True)
class Usage:
    """What judging one session cost; filled by the judge as it answers."""

    calls: int = 0
    cached: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    by_metric: dict[str, int] = field(default_factory=dict)


class Judge(Protocol):
    name: str
    remote: bool
    """It calls out (an endpoint): the scorer publishes the checks without waiting for it."""

    async def ask(self, task: Task[T], usage: Usage | None = None) -> Answer[T] | Unjudged: ...

    def input_budget(self, task_overhead_chars: int) -> int:
        """Characters of input that fit one call beside the prompt and the answer."""
        ...

    def unanswered_seconds(self) -> float:
        """How long calls have waited on a judge that answers none (see `watch.EndpointWatch`)."""
        ...
