"""Spend and pace limits for judge calls: an hourly budget, a rate limiter, bounded admission.

Nothing here queues without bound: a call over budget, or arriving when `max_pending` calls are
already waiting for a slot, is refused at once (the caller records it as skipped).
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable

HOUR = 3600.0


class HourlyBudget:
    """Calls and tokens spent in the last rolling hour, against their limits."""

    def __init__(
        self, calls: int, tokens: int, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.max_calls = calls
        self.max_tokens = tokens
        self.clock = clock
        self._spent: deque[list[float]] = deque()  # [when, tokens] per call
        self._tokens = 0

    def _expire(self) -> None:
        cutoff = self.clock() - HOUR
        while self._spent and self._spent[0][0] <= cutoff:
            self._tokens -= int(self._spent.popleft()[1])

    def refuse(self, tokens: int) -> str | None:
        """Why a call of about `tokens` would exceed the budget; None when it fits."""
        self._expire()
        if len(self._spent) + 1 > self.max_calls:
            return "budget_calls"
        if self._tokens + tokens > self.max_tokens:
            return "budget_tokens"
        return None

    def spend(self, tokens: int) -> list[float]:
        """Reserve a call of about `tokens`; the entry lets `settle` correct the estimate."""
        entry = [self.clock(), float(tokens)]
        self._spent.append(entry)
        self._tokens += tokens
        return entry

    def release(self, entry: list[float]) -> None:
        """Give back a reservation for a call that was not made."""
        for item in self._spent:
            if item is entry:
                self._spent.remove(item)
                self._tokens -= int(entry[1])
                return

    def settle(self, entry: list[float], actual: int) -> None:
        """Replace a reserved estimate with the endpoint's count (if not yet expired)."""
        if any(item is entry for item in self._spent):
            self._tokens += actual - int(entry[1])
            entry[1] = float(actual)


class RateLimiter:
    """At most `rate` call starts per second (evenly spaced, no burst beyond one)."""

    def __init__(self, rate: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.interval = 1.0 / rate
        self.clock = clock
        self._next = 0.0
        self._lock = asyncio.Lock()

    async def wait(self) -> None:
        async with self._lock:
            now = self.clock()
            delay = self._next - now
            self._next = max(now, self._next) + self.interval
        if delay > 0:
            await asyncio.sleep(delay)


class Admission:
    """A concurrency limit with a bounded number of waiters."""

    def __init__(self, concurrency: int, max_pending: int) -> None:
        self._slots = asyncio.Semaphore(concurrency)
        self.max_pending = max_pending
        self.concurrency = concurrency
        self._waiting = 0
        self._active = 0

    def full(self) -> bool:
        return self._active >= self.concurrency and self._waiting >= self.max_pending

    async def __aenter__(self) -> None:
        self._waiting += 1
        try:
            await self._slots.acquire()
        finally:
            self._waiting -= 1
        self._active += 1

    async def __aexit__(self, *exc: object) -> None:
        self._active -= 1
        self._slots.release()
