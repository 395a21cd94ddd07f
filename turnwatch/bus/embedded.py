"""The embedded bus: bounded in-process topics, optionally kept on disk; no broker.

A topic holds at most `queue_size` records. `publish` waits while the topic is full, which stalls
the collector's handoff task; the handoff queue then fills and the OTLP receivers answer 503 with
Retry-After (the pipeline's `overloaded()`), so backpressure reaches the chatbot's exporter.
Each consumer group subscribed to a topic gets its own bounded queue of it (one process, so one
member per group): the exporter's session store reads `turnwatch.sessions` beside the scorer, and
a record is published once every group's queue took it, so the slowest group holds the collector
back. The dead letter topic has none: it keeps the newest records in memory and counts what it
pushes out.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Sequence
from pathlib import Path

from turnwatch.bus.base import Handler, RecordProcessor, encode_for_publish
from turnwatch.bus.config import BusConfig
from turnwatch.bus.ledger import OffsetLedger
from turnwatch.bus.metrics import BusMetrics
from turnwatch.bus.records import DEAD_LETTER, TOPICS, Record, topic_label
from turnwatch.bus.spool import DiskSpool, Fifo, FifoFull, Item, MemoryFifo
from turnwatch.revisions import SeenRevisions

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
        self._spool_dir = spool_dir if embedded.spool else None
        # Each topic's first queue goes to the first group that subscribes; later groups get
        # their own (`_fanout`), filled from the moment they subscribe.
        self._topics: dict[str, _Topic] = {}
        self._owner: dict[str, str | None] = {}
        self._fanout: dict[str, dict[str, _Topic]] = {}
        for topic in TOPICS:
            if topic == DEAD_LETTER:
                continue
            self._topics[topic] = _Topic(self._fifo(topic))
            self._owner[topic] = None
            self._fanout[topic] = {}
            metrics.queue_depth.labels(topic).set(len(self._topics[topic].fifo))
        self.dead_letters: deque[tuple[str, Record]] = deque(maxlen=DEAD_LETTER_KEPT)
        self._watermark = max(1, int(embedded.queue_size * embedded.high_watermark))
        self._dedupe: dict[str, SeenRevisions] = {}

    def _fifo(self, name: str) -> Fifo:
        embedded = self.config.embedded
        if self._spool_dir is None:
            return MemoryFifo(embedded.queue_size)
        return DiskSpool(
            self._spool_dir / "embedded" / name,
            self.config.spool.max_bytes,
            self.config.spool.segment_bytes,
            max_records=embedded.queue_size,
        )

    def subscribe(self, topics: Sequence[str], group: str) -> None:
        """Give `group` a queue of each topic; call before anything is published to it."""
        for topic in topics:
            if topic not in self._topics:
                raise ValueError(f"unknown topic {topic_label(topic)}")
            owner = self._owner[topic]
            if owner is None:
                self._owner[topic] = group
            elif owner != group and group not in self._fanout[topic]:
                self._fanout[topic][group] = _Topic(self._fifo(f"{topic}.{group}"))

    def _queues(self, topic: str) -> list[_Topic]:
        return [self._topics[topic], *self._fanout[topic].values()]

    def _queue(self, topic: str, group: str) -> _Topic:
        return self._fanout[topic].get(group, self._topics[topic])

    def _all_queues(self) -> list[_Topic]:
        return [queue for topic in self._topics for queue in self._queues(topic)]

    def _show_depth(self, topic: str) -> None:
        depth = max(len(queue.fifo) for queue in self._queues(topic))
        self.metrics.queue_depth.labels(topic).set(depth)

    async def start(self) -> None:
        return None

    async def publish(self, topic: str, key: str, record: Record) -> None:
        value = encode_for_publish(self.metrics, log, topic, record, self.config.max_record_bytes)
        if topic == DEAD_LETTER:
            self.dead_letters.append((key, record))
            self.metrics.produced.labels(topic).inc()
            return
        if topic not in self._topics:
            raise ValueError(f"unknown topic {topic_label(topic)}")
        item = Item(topic, key, value)
        for state in self._queues(topic):
            await self._append(state, item)
        self.metrics.produced.labels(topic).inc()
        self._show_depth(topic)

    async def _append(self, state: _Topic, item: Item) -> None:
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

    async def consume(
        self,
        topics: Sequence[str],
        group: str,
        handler: Handler,
        stop: asyncio.Event,
        ledger: OffsetLedger | None = None,
    ) -> None:
        if ledger is not None:
            # Held records exist to survive a member that dies or moves partitions; one
            # process with an in-memory queue has neither, so say so rather than pretend.
            raise ValueError("records held past their handler need Kafka (bus.kafka.bootstrap)")
        self.subscribe(topics, group)
        dedupe = self._dedupe.setdefault(group, SeenRevisions(self.config.dedupe_entries))
        processor = RecordProcessor(self, handler, self.config.max_record_bytes, dedupe)
        loops = [self._consume_topic(topic, group, processor, stop) for topic in topics]
        await asyncio.gather(*loops)

    async def _consume_topic(
        self, topic: str, group: str, processor: RecordProcessor, stop: asyncio.Event
    ) -> None:
        state = self._queue(topic, group)
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
                self._show_depth(topic)
        finally:
            stopping.cancel()

    def readiness(self) -> str | None:
        full = [
            topic
            for topic in self._topics
            if any(len(queue.fifo) >= self._watermark for queue in self._queues(topic))
        ]
        return f"embedded bus saturated: {', '.join(full)}" if full else None

    async def idle(self, timeout: float) -> bool:
        """Wait until every topic is empty (consumers caught up); False if `timeout` passed."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if all(len(q.fifo) == 0 and not q.consumer_busy for q in self._all_queues()):
                return True
            await asyncio.sleep(0.02)
        return False

    async def close(self) -> int:
        lost = 0
        for topic in self._topics:
            for state in self._queues(topic):
                if isinstance(state.fifo, MemoryFifo) and len(state.fifo):
                    lost += len(state.fifo)
                    self.metrics.lost_at_shutdown.labels(topic).inc(len(state.fifo))
                state.fifo.close()
        return lost
