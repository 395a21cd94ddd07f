"""One chat-completions exchange read: the body, a failure, a retry, or a feature to drop.

Kept apart from the client so that what a response means is one small pure function; the client
decides what to count and whether to send again.
"""

from __future__ import annotations

import email.utils
import logging
import time
from dataclasses import dataclass
from typing import Any, Literal

import httpx
import orjson

from turnwatch.retry import Retryable

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


Exchange = dict[str, Any] | Failed | Unsupported | Retryable

GIVE_UP_REASONS = {"http_429": "rate_limited", "timeout": "timeout"}
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


def _json_body(response: httpx.Response) -> dict[str, Any] | Failed:
    try:
        parsed = orjson.loads(response.content)
    except orjson.JSONDecodeError:
        return Failed("bad_response", "invalid_json")
    return parsed if isinstance(parsed, dict) else Failed("bad_response", None)


def retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())
