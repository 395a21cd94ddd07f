"""A chat-completions answer as the judge reads it: JSON first, then the `Completion` model.

Nothing an endpoint sends reaches a metric unchecked. The body is parsed with non-finite numbers
told apart (JSON has no NaN or Infinity, but endpoints write them, as literals, as strings, or as
numbers too large for a double), then validated into `Completion`: wrong types, a missing choice
or a NaN logprob make the whole answer malformed, never a value downstream. Token counts are read
apart from the answer (`token_counts`), so an endpoint reporting impossible counts loses its
report, not its verdict.
"""

from __future__ import annotations

import json
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError


class NotFinite(ValueError):
    """The JSON holds NaN, Infinity or a number that overflows a double."""


def _refuse_constant(name: str) -> Any:
    raise NotFinite(name)


def _finite_float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise NotFinite("overflow")
    return value


def loads(data: bytes | str) -> Any:
    """Parsed JSON; `NotFinite` for a non-finite number, ValueError for anything else not JSON.

    orjson refuses non-finite numbers along with every other error; only then the standard
    library parser reads it again to say which it was (and takes integers past 64 bits)."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        pass
    try:
        return json.loads(data, parse_constant=_refuse_constant, parse_float=_finite_float)
    except RecursionError:
        raise ValueError("nested too deeply") from None


class _Answer(BaseModel):
    # Unknown keys are ignored (endpoints add their own); a float field refuses NaN and Infinity.
    model_config = ConfigDict(allow_inf_nan=False)


class Alternative(_Answer):
    token: str
    logprob: float = Field(le=0)


class TokenLogprobs(_Answer):
    token: str
    logprob: float | None = Field(default=None, le=0)
    top_logprobs: list[Alternative] | None = None


class Logprobs(_Answer):
    content: list[TokenLogprobs] | None = None


class Message(_Answer):
    content: str | None = None
    refusal: str | None = None


class Choice(_Answer):
    message: Message = Field(default_factory=Message)
    finish_reason: str | None = None
    logprobs: Logprobs | None = None


class Completion(_Answer):
    choices: list[Choice] = Field(min_length=1)
    usage: Any = None
    """Read by `token_counts`, not validated here: a bad report must not cost the verdict."""


def completion(data: Any) -> Completion | str:
    """The validated answer, or the error reason: `non_finite` or `malformed_response`."""
    try:
        return Completion.model_validate(data)
    except ValidationError as exc:
        finite = all(error["type"] != "finite_number" for error in exc.errors())
        return "malformed_response" if finite else "non_finite"


def token_counts(usage: Any, maximum: int) -> tuple[int | None, int | None] | None:
    """(prompt, completion) tokens as reported, None for a count not given (or 0); None for the
    whole report when it cannot be true: a count that is negative, not a whole number, or over
    `maximum`. Whoever controls the endpoint must not be able to spend the budget backwards."""
    if usage is None:
        return None, None
    if not isinstance(usage, dict):
        return None
    try:
        return (
            _count(usage.get("prompt_tokens"), maximum),
            _count(usage.get("completion_tokens"), maximum),
        )
    except ValueError:
        return None


def _count(value: Any, maximum: int) -> int | None:
    if value is None:
        return None
    # bool is an int to Python, and 12.0 is not a token count.
    if type(value) is not int or not 0 <= value <= maximum:
        raise ValueError("impossible token count")
    return value or None
