"""One chat-completions exchange read: the answer, a failure, a retry, or a feature to drop.

Kept apart from the client so that what a response means is one small pure function; the client
decides what to count and whether to send again. A 200 answer is validated into
`wire.Completion` here, so every malformed answer is a `Failed` with its error reason.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Literal

import httpx
from turnwatch.scorers.judge.wire import Completion, NotFinite, completion, loads

from turnwatch.retry import Retryable, retry_after

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Failed:
    """A response not worth retrying: `reason` for the Unjudged, `error` for the errors counter."""

    reason: str
    error: str | None


@dataclass(frozen=True, slots=True)
class Unsupported:
    """The endpoint rejected an optional request feature; send again without it."""

    feature: Literal["json_mode", "logprobs"]


Exchange = Completion | Failed | Unsupported | Retryable

GIVE_UP_REASONS = {"http_429": "rate_limited", "timeout": "timeout", "deadline": "deadline"}
"""The Unjudged reason when retries run out, by the last attempt's reason (else endpoint_error)."""


def classify_response(
    response: httpx.Response, optional_json_mode: bool, asked_logprobs: bool
) -> Exchange:
    """What one chat-completions response means: the body, a failure, a retry or a downgrade."""
    status = response.status_code
    if status == 200:
        return _json_body(response)
    if status == 400:
        text = response.text[:2000].lower()
        if "context" in text and ("length" in text or "window" in text):
            return Failed("context_overflow", "context_overflow")
        if optional_json_mode and "response_format" in text:
            return Unsupported("json_mode")
        if asked_logprobs and "logprobs" in text:
            return Unsupported("logprobs")
    if status == 429:
        return Retryable("http_429", retry_after(response))
    if status >= 500:
        return Retryable("http_5xx", retry_after(response))
    log.warning("judge request refused", extra={"status": status})
    return Failed("endpoint_error", "http_4xx")


def _json_body(response: httpx.Response) -> Completion | Failed:
    try:
        parsed = loads(response.content)
    except NotFinite:
        return Failed("non_finite", "non_finite")
    except ValueError:
        return Failed("bad_response", "invalid_json")
    answer = completion(parsed)
    if isinstance(answer, str):
        return Failed("non_finite" if answer == "non_finite" else "bad_response", answer)
    return answer


async def read_body(response: httpx.Response, max_bytes: int) -> bytes | None:
    """The whole (decoded) body, or None once it passes `max_bytes`: stop reading, not buffer."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > max_bytes:
            return None
        chunks.append(chunk)
    return b"".join(chunks)
