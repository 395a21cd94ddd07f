"""Waiting in tests: poll for a condition with a deadline, never sleep a fixed time and hope.

Inside a coroutine, run it in a thread so the event loop keeps going:
`await asyncio.to_thread(eventually, probe, until)`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def eventually(
    probe: Callable[[], T],
    until: Callable[[T], object] = bool,
    *,
    timeout: float = 15.0,
    interval: float = 0.05,
    what: str = "",
    ignoring: type[BaseException] | tuple[type[BaseException], ...] = (),
) -> T:
    """Call `probe` until `until(value)` holds and return that value.

    Past `timeout` seconds, fail with `what` and the last value seen, so the message says how far
    things got. Exceptions listed in `ignoring` (a server not listening yet) count as not yet.
    """
    deadline = time.monotonic() + timeout
    last: Any = "nothing: probe never returned"
    while True:
        try:
            value = probe()
        except ignoring as error:
            last = error
        else:
            if until(value):
                return value
            last = value
        if time.monotonic() >= deadline:
            raise AssertionError(
                f"timed out after {timeout}s waiting for {what or 'the condition'}; "
                f"last value: {last!r}"
            )
        time.sleep(interval)
