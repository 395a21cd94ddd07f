"""The generic retry policy, and how the judge reads one chat-completions response."""

from __future__ import annotations

import logging

import httpx
import pytest
from turnwatch.scorers.judge.exchange import Failed, Unsupported, classify_response
from turnwatch.scorers.judge.wire import Completion

from turnwatch.retry import Backoff, Retryable, retry

log = logging.getLogger("tests.retry")


class Script:
    """An attempt function that returns the scripted outcomes in order and counts its calls."""

    def __init__(self, *outcomes: object) -> None:
        self.outcomes = list(outcomes)
        self.calls = 0

    async def __call__(self) -> object:
        self.calls += 1
        return self.outcomes.pop(0)


class Sleeps(list[float]):
    async def __call__(self, seconds: float) -> None:
        self.append(seconds)


async def test_a_result_returns_at_once_without_waiting():
    attempt, sleeps = Script("body"), Sleeps()
    assert await retry(attempt, Backoff(3, 1.0, 30.0), log, "test", sleeps) == "body"
    assert (attempt.calls, sleeps) == (1, [])


async def test_retries_double_the_delay_and_then_return_the_last_failure():
    failures = [Retryable("timeout"), Retryable("http_5xx"), Retryable("connection")]
    attempt, sleeps = Script(*failures), Sleeps()
    outcome = await retry(attempt, Backoff(2, 1.0, 30.0), log, "test", sleeps)
    assert outcome == Retryable("connection")
    assert attempt.calls == 3
    # Jitter keeps each wait within 50-100 % of the doubled delay.
    assert 0.5 <= sleeps[0] <= 1.0 and 1.0 <= sleeps[1] <= 2.0


async def test_a_server_asked_delay_replaces_the_backoff():
    attempt, sleeps = Script(Retryable("http_429", after=7.0), "body"), Sleeps()
    assert await retry(attempt, Backoff(3, 0.01, 30.0), log, "test", sleeps) == "body"
    assert sleeps == [7.0]


async def test_a_wait_beyond_the_longest_gives_up_without_sleeping():
    attempt, sleeps = Script(Retryable("http_429", after=60.0), "never"), Sleeps()
    outcome = await retry(attempt, Backoff(3, 0.01, 30.0), log, "test", sleeps)
    assert outcome == Retryable("http_429", after=60.0)
    assert (attempt.calls, sleeps) == (1, [])


async def test_no_retries_means_one_attempt():
    attempt, sleeps = Script(Retryable("timeout"), "never"), Sleeps()
    assert await retry(attempt, Backoff(0, 0.01, 30.0), log, "test", sleeps) == Retryable("timeout")
    assert (attempt.calls, sleeps) == (1, [])


def _response(status: int, body: bytes = b"{}", **headers: str) -> httpx.Response:
    return httpx.Response(status, content=body, headers=headers)


def _with_logprob(logprob: bytes) -> bytes:
    """An answer whose score token has one alternative with this logprob, written as is."""
    return (
        b'{"choices": [{"message": {"content": "{\\"score\\": 7}"}, "logprobs": {"content": '
        b'[{"token": "7", "logprob": -0.1, "top_logprobs": [{"token": "7", "logprob": '
        + logprob
        + b"}]}]}}]}"
    )


@pytest.mark.parametrize(
    ("response", "expected"),
    [
        (
            _response(200, b'{"choices": [{"message": {"content": "{}"}}]}'),
            Completion.model_validate({"choices": [{"message": {"content": "{}"}}]}),
        ),
        (_response(200, b"not json"), Failed("bad_response", "invalid_json")),
        (_response(200, b"[" * 100_000), Failed("bad_response", "invalid_json")),
        (_response(200, b'{"choices": []}'), Failed("bad_response", "malformed_response")),
        (_response(200, b"[1, 2]"), Failed("bad_response", "malformed_response")),
        (
            _response(200, b'{"choices": [{"message": {"content": 7}}]}'),
            Failed("bad_response", "malformed_response"),
        ),
        (_response(200, _with_logprob(b"NaN")), Failed("non_finite", "non_finite")),
        (_response(200, _with_logprob(b"-Infinity")), Failed("non_finite", "non_finite")),
        (_response(200, _with_logprob(b"-1e999")), Failed("non_finite", "non_finite")),
        (_response(200, _with_logprob(b'"NaN"')), Failed("non_finite", "non_finite")),
        (_response(200, _with_logprob(b'"-inf"')), Failed("non_finite", "non_finite")),
        (_response(200, _with_logprob(b"3.5")), Failed("bad_response", "malformed_response")),
        (
            _response(400, b"maximum context length exceeded"),
            Failed("context_overflow", "context_overflow"),
        ),
        (_response(400, b"response_format is not supported"), Unsupported("json_mode")),
        (_response(400, b"logprobs are not supported"), Unsupported("logprobs")),
        (_response(400, b"bad request"), Failed("endpoint_error", "http_4xx")),
        (_response(401, b"no key"), Failed("endpoint_error", "http_4xx")),
        (_response(429, b"", **{"retry-after": "3"}), Retryable("http_429", 3.0)),
        (_response(503, b""), Retryable("http_5xx", None)),
    ],
)
def test_each_response_is_classified(response, expected):
    assert classify_response(response, optional_json_mode=True, asked_logprobs=True) == expected


def test_a_feature_not_asked_for_is_not_dropped():
    rejected = _response(400, b"response_format and logprobs are not supported")
    assert classify_response(rejected, optional_json_mode=False, asked_logprobs=False) == Failed(
        "endpoint_error", "http_4xx"
    )
