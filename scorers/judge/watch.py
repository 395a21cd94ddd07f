"""Whether the judge endpoint answers: requests on the wire, and how long it has gone unanswered.

A judge that never answers (a black hole, or one dripping its answer a byte at a time) fails each
request only at its deadline, and every later request the same way: errors arrive slowly, and a
count of requests in flight cannot tell a stuck judge from a busy one. The clearer sign is
`unanswered_seconds`: the time since the first request sent after the endpoint's last answer (an
answer of any status: a judge answering 500 is failing, not stuck), while something still waits
on it. Retries and later sessions do not reset it; only an answer does.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager


class EndpointWatch:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.inflight = 0
        """HTTP requests on the wire."""
        self.waiting = 0
        """Judge calls in progress: waiting for a slot, on the wire, or between retries."""
        self._unanswered_since: float | None = None

    @contextmanager
    def asking(self) -> Iterator[None]:
        self.waiting += 1
        try:
            yield
        finally:
            self.waiting -= 1

    @contextmanager
    def sending(self) -> Iterator[None]:
        if self._unanswered_since is None:
            self._unanswered_since = self.clock()
        self.inflight += 1
        try:
            yield
        finally:
            self.inflight -= 1

    def answered(self) -> None:
        self._unanswered_since = None

    def unanswered_seconds(self) -> float:
        """0 when nothing waits on the endpoint or it answered since the last request went out."""
        if self._unanswered_since is None or not self.waiting:
            return 0.0
        return max(0.0, self.clock() - self._unanswered_since)
