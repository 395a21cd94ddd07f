"""The handoff: the bounded queue between the request path and the stages after it.

The pipeline offers each closed, sampled session here and returns to the request at once; one task
assembles queued sessions into their wire records (off the request path) and delivers them, in
order, to the next stage (de-identification, then the bus). Above the high watermark the
receivers answer 503 with Retry-After; a session that finds the queue full is dropped and counted.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from turnwatch.collector.config import HandoffConfig
from turnwatch.collector.metrics import CollectorMetrics
from turnwatch.collector.pipeline import PendingSession, SessionBuilder, SessionSink

log = logging.getLogger("turnwatch.collector")


class Handoff:
    def __init__(
        self,
        config: HandoffConfig,
        metrics: CollectorMetrics,
        build: SessionBuilder,
        next_stage: SessionSink,
    ) -> None:
        self.metrics = metrics
        self.build = build
        self.next_stage = next_stage
        self.queue: asyncio.Queue[PendingSession] = asyncio.Queue(maxsize=config.queue_size)
        self._watermark = max(1, int(config.queue_size * config.high_watermark))

    def overloaded(self) -> bool:
        return self.queue.qsize() >= self._watermark

    def offer(self, pending: PendingSession) -> None:
        try:
            self.queue.put_nowait(pending)
        except asyncio.QueueFull:
            self.metrics.handoff_dropped.labels("queue_full").inc()
            log.warning("handoff queue full; session dropped", extra={"reason": "queue_full"})
            pending.settle()  # dropped and counted: holding it would stall its partition
        self.metrics.handoff_depth.set(self.queue.qsize())

    async def run(self) -> None:
        while True:
            pending = await self.queue.get()
            try:
                await self._hand_on(pending)
            finally:
                pending.settle()
                self.queue.task_done()
                self.metrics.handoff_depth.set(self.queue.qsize())

    async def _hand_on(self, pending: PendingSession) -> None:
        if pending.superseded():
            # Not lost: the partition's new owner replays its observations and publishes it.
            self.metrics.handoff_dropped.labels("partition_moved").inc()
            return
        try:
            session = self.build(pending)
        except Exception:
            # An assembler bug on strange input costs this session, never the pipeline.
            self.metrics.handoff_dropped.labels("assembly_error").inc()
            log.exception("session assembly failed", extra={"reason": "assembly_error"})
            return
        try:
            await self.next_stage.deliver(session)
            self.metrics.handoff_delivered.inc()
        except Exception:
            self.metrics.handoff_dropped.labels("sink_error").inc()
            log.exception("next stage failed; session dropped", extra={"reason": "sink_error"})

    async def drain(self) -> None:
        """Wait until the next stage has taken every queued session."""
        with contextlib.suppress(asyncio.CancelledError):
            await self.queue.join()

    def count_lost(self) -> int:
        """At a drain that ran out of time: the task is stuck delivering one session (the next
        stage is full and does not drain) and the rest wait behind it; all of them are lost."""
        lost = self.queue.qsize() + 1
        self.metrics.handoff_dropped.labels("shutdown").inc(lost)
        return lost
