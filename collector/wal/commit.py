"""When a written request counts as durable: the fsync policy, with group commit.

One task runs the fsyncs, in a worker thread so the event loop keeps accepting and writing.
`always`: as soon as something is unsynced, fsync; a request written while one runs waits for the
next, so every request waits for an fsync that began after its write, and concurrent requests
share one. `batch`: the same, but the first unsynced write starts a `group_commit_ms` timer, and
one fsync then covers every request written meanwhile. `never`: no fsync; a request is durable
once written to the operating system (a killed process loses nothing, a power cut may).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time

from turnwatch.collector.wal.config import FsyncPolicy
from turnwatch.collector.wal.metrics import WalMetrics
from turnwatch.collector.wal.segments import SegmentLog, WalWriteFailed

log = logging.getLogger("turnwatch.collector.wal")


class Committer:
    def __init__(
        self, segments: SegmentLog, policy: FsyncPolicy, interval_ms: float, metrics: WalMetrics
    ) -> None:
        self.segments = segments
        self.policy = policy
        self.delay = interval_ms / 1000 if policy == "batch" else 0.0
        self.metrics = metrics
        self.synced_seq = segments.last_seq
        self._wanted = asyncio.Event()
        self._round: asyncio.Future[None] | None = None
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self.policy != "never":
            self._task = asyncio.create_task(self._run(), name="wal-commit")

    async def durable(self, seq: int) -> None:
        """Return once frame `seq` is as durable as the policy promises; WalWriteFailed if the
        fsync meant to cover it failed."""
        if self.policy == "never":
            return
        while self.synced_seq < seq:
            if self._round is None:
                self._round = asyncio.get_running_loop().create_future()
            round_done = self._round
            self._wanted.set()
            await asyncio.shield(round_done)

    async def _run(self) -> None:
        while True:
            await self._wanted.wait()
            self._wanted.clear()
            if self.delay:
                await asyncio.sleep(self.delay)
            round_done, self._round = self._round, None
            target = self.segments.last_seq
            started = time.perf_counter()
            try:
                await asyncio.to_thread(self.segments.sync)
            except WalWriteFailed as exc:
                self.metrics.write_errors.labels("fsync").inc()
                log.error("write-ahead log fsync failed", extra={"error": str(exc)})
                if round_done is not None and not round_done.done():
                    round_done.set_exception(exc)
                continue
            self.metrics.fsync_duration.observe(time.perf_counter() - started)
            self.synced_seq = max(self.synced_seq, target)
            self.metrics.unsynced_frames.set(self.segments.last_seq - self.synced_seq)
            if round_done is not None and not round_done.done():
                round_done.set_result(None)

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
