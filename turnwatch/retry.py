"""Retry with exponential backoff: one attempt function, a policy, and a cap on any single wait.

The attempt decides what is worth retrying (it returns `Retryable`); the policy only decides how
long to wait and when to give up, so any outbound call can share it.
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

import httpx

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Retryable:
    """An attempt that failed in a way worth trying again.

    `after` is the server's own request (Retry-After); it replaces the computed backoff."""

    reason: str
    after: float | None = None


@dataclass(frozen=True, slots=True)
class Backoff:
    retries: int
    """Attempts after the first."""
    first_delay: float
    """Seconds before the first retry; each later one doubles it."""
    longest_wait: float
    """A wait longer than this, Retry-After included, gives up instead: the caller has a deadline
    of its own, and a server asking for minutes will not be back in time to matter."""

    def delay(self, retry_number: int) -> float:
        # Jittered (50-100 %) so that callers failing together do not retry together.
        return self.first_delay * (2**retry_number) * (0.5 + random.random() / 2)


async def retry(
    attempt: Callable[[], Awaitable[T | Retryable]],
    backoff: Backoff,
    log: logging.Logger,
    what: str,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> T | Retryable:
    """Run `attempt` until it returns anything but `Retryable`; when the policy gives up, return
    the last `Retryable` (its reason says why the final attempt failed)."""
    retry_number = 0
    while True:
        outcome = await attempt()
        if not isinstance(outcome, Retryable) or retry_number >= backoff.retries:
            return outcome
        delay = backoff.delay(retry_number) if outcome.after is None else outcome.after
        if delay > backoff.longest_wait:
            log.warning(f"{what} retry-after too long", extra={"retry_after_s": round(delay)})
            return outcome
        retry_number += 1
        log.info(f"{what} retry", extra={"reason": outcome.reason, "attempt": retry_number})
        await sleep(delay)


def retry_after(response: httpx.Response) -> float | None:
    """The seconds a response's Retry-After asks for (delay-seconds or an HTTP date), if any."""
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
