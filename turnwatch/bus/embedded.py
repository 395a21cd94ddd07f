"""The embedded bus: bounded in-process topics, optionally kept on disk; no broker.

A topic holds at most `queue_size` records. `publish` waits while the topic is full, which stalls
the collector's handoff task; the handoff queue then fills and the OTLP receivers answer 503 with
Retry-After (the pipeline's `overloaded()`), so backpressure reaches the chatbot's exporter.
Each consumer group subscribed to a topic gets its own bounded queue of it (one process, so one
member per group): the exporter's session store reads `turnwatch.sessions` beside the scorer, and
a record is published once every group's queue took it, so the slowest group holds the collector
back. The dead letter topic has none: it keeps the newest records in memory and counts what it
pushes out.

With its spool (`bus.embedded.spool`) the bus takes an `OffsetLedger`, as the Kafka consumer
does: a handler may hold a record past its return (the exporter holds a score record until its
evaluation events are accepted), and the bus then acknowledges (moves the spool's cursor past)
only the records below the oldest one held; the rest are delivered again after a restart. Each
queue is one partition (0) of its topic, numbered from 0 in each process. A held record keeps its
room in the queue until it is acknowledged, so a hold that lasts fills the queue and publishing
waits (back-pressure up to OTLP 503), never a queue that grows. In memory there is no ledger: a
killed process loses the queue anyway.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections import deque
from collections.abc import Callable, Coroutine, Sequence
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
        self.taken = 0
        """The offset of the next record to take, this process counting from 0."""
        self.acknowledged = 0
        """The offset of the first record not acknowledged."""
        self.ledger: OffsetLedger | None = None
        """The consumer's, when it holds records: nothing at or past its oldest hold is
        acknowledged."""


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
        self._background: set[asyncio.Future[None]] = set()

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
            # With room, every queue takes the record in this step, and `publish` returns
            # without yielding: the collector writes its log's done mark right after, with no
            # other task between. Waiting here for a queue's lock (a consumer just woken holds
            # it) let other tasks run first, and a kill there had the restart publish the
            # session again as a second revision.
            try:
                state.fifo.append(item)
            except FifoFull:
                await self._append(state, item)
            else:
                self._track(functools.partial(self._wake, state))
        self.metrics.produced.labels(topic).inc()
        self._show_depth(topic)

    @staticmethod
    async def _wake(state: _Topic) -> None:
        async with state.changed:
            state.changed.notify_all()

    async def _append(self, state: _Topic, item: Item) -> None:
        """Append once the queue has room (a consumer's pop wakes us)."""
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
        if ledger is not None and self._spool_dir is None:
            # Held records exist to survive a process that dies; an in-memory queue dies with
            # it, so say so rather than pretend.
            raise ValueError(
                "records held past their handler need Kafka (bus.kafka.bootstrap) or the "
                "embedded spool (bus.embedded.spool: true)"
            )
        self.subscribe(topics, group)
        dedupe = self._dedupe.setdefault(group, SeenRevisions(self.config.dedupe_entries))
        processor = RecordProcessor(self, handler, self.config.max_record_bytes, dedupe, ledger)
        # The ledger knows one record in hand at a time (the Kafka consumer's one thread hands
        # them over one by one), so with it this group's topics take turns.
        turns: contextlib.AbstractAsyncContextManager[object] = contextlib.nullcontext()
        if ledger is not None:
            await self._attach(ledger, topics, group)
            turns = asyncio.Lock()
        loops = [self._consume_topic(topic, group, processor, stop, turns) for topic in topics]
        await asyncio.gather(*loops)

    async def _attach(self, ledger: OffsetLedger, topics: Sequence[str], group: str) -> None:
        """One partition per topic, this process's for good: assigned once (restored by the
        handler's `on_gained`, if it has one), and acknowledged as its holds are released."""
        ledger.assign((topic, 0) for topic in topics)
        gained = ledger.take_gained()
        if ledger.on_gained is not None and gained:
            await ledger.on_gained(gained)
        loop = asyncio.get_running_loop()
        queues = [(topic, self._queue(topic, group)) for topic in topics]
        for _topic, state in queues:
            state.ledger = ledger

        async def acknowledge_released() -> None:
            for topic, state in queues:
                async with state.changed:
                    if self._acknowledge(topic, state):
                        state.changed.notify_all()
                self._show_depth(topic)

        def released() -> None:
            loop.call_soon_threadsafe(self._track, acknowledge_released)

        ledger.on_release = released

    def _track(self, work: Callable[[], Coroutine[None, None, None]]) -> None:
        task = asyncio.ensure_future(work())
        self._background.add(task)  # the loop keeps only a weak reference to a task
        task.add_done_callback(self._background.discard)

    @staticmethod
    def _acknowledge(topic: str, state: _Topic) -> bool:
        """Acknowledge the records taken below the oldest held; whether any was."""
        ledger = state.ledger
        upto = state.taken if ledger is None else ledger.committable(topic, 0, state.taken)
        if upto <= state.acknowledged:
            return False
        state.fifo.acknowledge(upto - state.acknowledged)
        state.acknowledged = upto
        return True

    async def _consume_topic(
        self,
        topic: str,
        group: str,
        processor: RecordProcessor,
        stop: asyncio.Event,
        turns: contextlib.AbstractAsyncContextManager[object],
    ) -> None:
        state = self._queue(topic, group)
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
                    async with turns:
                        await processor.handle(topic, item.key, item.value, 0, state.taken)
                finally:
                    state.consumer_busy = False
                async with state.changed:
                    # The acknowledgement: only after the outputs are out, and not past a hold.
                    state.fifo.take()
                    state.taken += 1
                    self._acknowledge(topic, state)
                    state.changed.notify_all()
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
        """Wait until no record waits in any topic (consumers caught up; records a handler holds
        stay, for its own drain); False if `timeout` passed."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if all(q.fifo.waiting == 0 and not q.consumer_busy for q in self._all_queues()):
                return True
            await asyncio.sleep(0.02)
        return False

    async def close(self) -> int:
        for task in self._background:
            task.cancel()  # done below, for every queue at once
        lost = 0
        for topic in self._topics:
            for state in self._queues(topic):
                self._acknowledge(topic, state)  # what the drain released since
                if isinstance(state.fifo, MemoryFifo) and len(state.fifo):
                    lost += len(state.fifo)
                    self.metrics.lost_at_shutdown.labels(topic).inc(len(state.fifo))
                state.fifo.close()
        return lost
