"""Sessions being judged after their checks were published: bounded, counted, drained at shutdown.

The scorer role publishes a session's deterministic results as soon as the checks finish and
hands its judge metrics to the backlog, so no judge (slow, failing or stuck) holds back a check
result or the next session. The backlog holds at most `max_sessions_in_flight` sessions; the
caller refuses more (their metrics unscored, `backlog_full`) rather than queueing without bound.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

from turnwatch.scorers.judge.telemetry import JudgeTelemetry


class Backlog:
    def __init__(self, limit: int, telemetry: JudgeTelemetry) -> None:
        self.limit = limit
        self.telemetry = telemetry
        self.stopping = asyncio.Event()
        """Set by `drain`: judging still under way ends at once, its metrics unscored."""
        self._tasks: set[asyncio.Task[None]] = set()

    def full(self) -> bool:
        return len(self._tasks) >= self.limit

    def __len__(self) -> int:
        return len(self._tasks)

    def start(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(work, name="judge-session")
        self._tasks.add(task)
        self.telemetry.sessions_inflight.inc()
        task.add_done_callback(self._finished)

    def _finished(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        self.telemetry.sessions_inflight.dec()

    async def drain(self, timeout: float) -> None:
        """Let the sessions being judged finish for up to `timeout`; then end the rest, whose
        metrics not yet done are unscored (`shutdown`), and wait for their judged parts to be
        published."""
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=timeout)
        self.stopping.set()
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=timeout)
