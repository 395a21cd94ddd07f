"""The embedded bus: bounded in-process topics, optionally kept on disk; no broker.

A topic holds at most `queue_size` records. `publish` waits while the topic is full, which stalls
the collector's handoff task; the handoff queue then fills and the OTLP receivers answer 503 with
Retry-After (the pipeline's `overloaded()`), so backpressure reaches the chatbot's exporter.
Each topic has one consumer (one process, so one group member). The dead letter topic has none:
it keeps the newest records in memory and counts what it pushes out.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Sequence
from pathlib import Path

from turnwatch.bus.base import Handler, RecordProcessor
from turnwatch.bus.config import BusConfig
from turnwatch.bus.dedupe import Deduper
from turnwatch.bus.metrics import BusMetrics
from turnwatch.bus.records import DEAD_LETTER, TOPICS, Record, RecordTooLarge, encode, topic_label
from turnwatch.bus.spool import DiskSpool, Fifo, FifoFull, Item, MemoryFifo

log = logging.getLogger("turnwatch.bus.embedded")

DEAD_LETTER_KEPT = 100
FULL_RETRY_SECONDS = 0.5


class _Topic:
    def __init__(self, fifo: Fifo) -> None:
        self.fifo = fifo
        self.changed = asyncio.Condition()
        self.consumer_busy = False


class EmbeddedBus:
    def __init__(self, config: BusConfig, metrics: BusMetrics, spool_dir: Path | None) -> None:
        self.config = config
        self.metrics = metrics
        embedded = config.embedded
        self._topics: dict[str, _Topic] = {}
        for topic in TOPICS:
            if topic == DEAD_LETTER:
                continue
            fifo: Fifo
            if embedded.spool and spool_dir is not None:
                fifo = DiskSpool(
                    spool_dir / "embedded" / topic,
                    config.spool.max_bytes,
                    config.spool.segment_bytes,
                    max_records=embedded.queue_size,
                )
            else:
                fifo = MemoryFifo(embedded.queue_size)
            self._topics[topic] = _Topic(fifo)
            metrics.queue_depth.labels(topic).set(len(fifo))
        self.dead_letters: deque[tuple[str, Record]] = deque(maxlen=DEAD_LETTER_KEPT)
        self._watermark = max(1, int(embedded.queue_size * embedded.high_watermark))
        self._dedupe = Deduper(config.dedupe_entries)

    async def start(self) -> None:
        return None

    async def publish(self, topic: str, key: str, record: Record) -> None:
        try:
            value = encode(record, self.config.max_record_bytes)
        except RecordTooLarge:
            self.metrics.rejected.labels(topic_label(topic), "too_large").inc()
            log.warning("record too large; rejected", extra={"topic": topic_label(topic)})
            raise
        if topic == DEAD_LETTER:
            self.dead_letters.append((key, record))
            self.metrics.produced.labels(topic).inc()
            return
        state = self._topics.get(topic)
        if state is None:
            raise ValueError(f"unknown topic {topic_label(topic)}")
        item = Item(topic, key, value)
        async with state.changed:
            waited = False
            while True:
                try:
                    state.fifo.append(item)
                    break
                except FifoFull:
                    if not waited:
                        self.metrics.spool_full.inc()
                        waited = True
                    # A consumer's pop wakes us; a disk that refused the write (SpoolWriteFailed)
                    # may get room without any pop, so look again after a while regardless.
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(state.changed.wait(), FULL_RETRY_SECONDS)
            state.changed.notify_all()
        self.metrics.produced.labels(topic).inc()
        self.metrics.queue_depth.labels(topic).set(len(state.fifo))

    async def consume(
        self, topics: Sequence[str], group: str, handler: Handler, stop: asyncio.Event
    ) -> None:
        processor = RecordProcessor(self, handler, self.config.max_record_bytes, self._dedupe)
        loops = [self._consume_topic(topic, processor, stop) for topic in topics]
        await asyncio.gather(*loops)

    async def _consume_topic(
        self, topic: str, processor: RecordProcessor, stop: asyncio.Event
    ) -> None:
        state = self._topics[topic]
        offset = 0
        stopping = asyncio.create_task(stop.wait())
        try:
            while not stop.is_set():
                async with state.changed:
                    item = state.fifo.peek()
                    if item is None:
                        waiting = asyncio.create_task(state.changed.wait())
                        await asyncio.wait({waiting, stopping}, return_when="FIRST_COMPLETED")
                        if not waiting.done():
                            waiting.cancel()
                            with contextlib.suppress(asyncio.CancelledError):
                                await waiting
                        continue
                    state.consumer_busy = True
                try:
                    await processor.handle(topic, item.key, item.value, 0, offset)
                finally:
                    state.consumer_busy = False
                async with state.changed:
                    state.fifo.pop()  # the acknowledgement: only after the outputs are out
                    state.changed.notify_all()
                offset += 1
                self.metrics.queue_depth.labels(topic).set(len(state.fifo))
        finally:
            stopping.cancel()

    def readiness(self) -> str | None:
        full = [t for t, s in self._topics.items() if len(s.fifo) >= self._watermark]
        return f"embedded bus saturated: {', '.join(full)}" if full else None

    async def idle(self, timeout: float) -> bool:
        """Wait until every topic is empty (consumers caught up); False if `timeout` passed."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if all(len(s.fifo) == 0 and not s.consumer_busy for s in self._topics.values()):
                return True
            await asyncio.sleep(0.02)
        return False

    async def close(self) -> int:
        lost = 0
        for topic, state in self._topics.items():
            if isinstance(state.fifo, MemoryFifo) and len(state.fifo):
                lost += len(state.fifo)
                self.metrics.lost_at_shutdown.labels(topic).inc(len(state.fifo))
            state.fifo.close()
        return lost
