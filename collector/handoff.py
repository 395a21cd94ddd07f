"""The handoff: the bounded queue between the request path and the stages after it.

The pipeline offers each closed, sampled session here and returns to the request at once; one task
assembles queued sessions into their wire records (off the request path) and delivers them, in
order, to the next stage (de-identification, then the bus). Above the high watermark the
receivers answer 503 with Retry-After; a session that finds the queue full is dropped and counted.

With the write-ahead log on, each session carries its claim on the log: released once the next
stage has it (or it was dropped and counted), and when the stage returns with the session still
in flight (de-identification worker processes), only once that finishes. It is kept when a
shutdown strands it, so the next start replays it instead of losing it. A sessionizer's session
likewise releases its bus positions only once handed on (or dropped and counted); one the
shutdown strands keeps them uncommitted, so the partition's next owner replays it.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from dataclasses import dataclass

from turnwatch.collector.config import HandoffConfig
from turnwatch.collector.metrics import CollectorMetrics
from turnwatch.collector.pipeline import PendingSession, SessionBuilder, SessionSink

log = logging.getLogger("turnwatch.collector")


@dataclass(frozen=True, slots=True)
class Stranded:
    """Sessions a drain that ran out of time left behind."""

    lost: int
    """Counted in `turnwatch_handoff_dropped_total{reason="shutdown"}`."""
    kept: int
    """Held by the write-ahead log: the next start replays them."""


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
        self._in_hand: PendingSession | None = None

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
            self._in_hand = pending
            try:
                await self._hand_on(pending)
            finally:
                self._in_hand = None
                self.queue.task_done()
                self.metrics.handoff_depth.set(self.queue.qsize())

    async def _hand_on(self, pending: PendingSession) -> None:
        if pending.superseded():
            # Not lost: the partition's new owner replays its observations and publishes it.
            self.metrics.handoff_dropped.labels("partition_moved").inc()
            pending.settle()
            return
        try:
            session = self.build(pending)
        except Exception:
            # An assembler bug on strange input costs this session, never the pipeline.
            self.metrics.handoff_dropped.labels("assembly_error").inc()
            log.exception("session assembly failed", extra={"reason": "assembly_error"})
            pending.settle()
            return
        try:
            in_flight = await self.next_stage.deliver(
                session, functools.partial(self._handed_on, pending)
            )
        except Exception:
            self._sink_failed()
            pending.settle()
            return
        if not in_flight:
            self._handed_on(pending, None)

    def _handed_on(self, pending: PendingSession, error: BaseException | None) -> None:
        if error is None:
            self.metrics.handoff_delivered.inc()
        else:
            self._sink_failed(error)
        pending.settle()

    def _sink_failed(self, error: BaseException | None = None) -> None:
        self.metrics.handoff_dropped.labels("sink_error").inc()
        log.error(
            "next stage failed; session dropped",
            extra={"reason": "sink_error"},
            exc_info=error or True,
        )

    async def drain(self) -> None:
        """Wait until the next stage has taken every queued session."""
        with contextlib.suppress(asyncio.CancelledError):
            await self.queue.join()

    def strand(self) -> Stranded:
        """At a drain that ran out of time: the task is stuck delivering one session (the next
        stage is full and does not drain) and the rest wait behind it. Those without a claim on
        the write-ahead log are lost (counted); the others stay in the log."""
        stranded = [self._in_hand] if self._in_hand is not None else []
        while not self.queue.empty():
            stranded.append(self.queue.get_nowait())
            self.queue.task_done()
        kept = sum(1 for pending in stranded if pending.claim is not None)
        lost = len(stranded) - kept
        self.metrics.handoff_dropped.labels("shutdown").inc(lost)
        self.metrics.handoff_depth.set(0)
        return Stranded(lost=lost, kept=kept)
