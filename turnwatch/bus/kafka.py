"""The Kafka bus (kafka-python 3.x), with a disk spool that rides out broker outages.

Producer: acks='all' and enable_idempotence=True set explicitly (3.x silently drops idempotence
when another setting conflicts unless it was asked for), compression, keyed by session id, a
bounded delivery timeout, and every send's future waited on. kafka-python calls block (metadata,
full buffers, future.get), so they run in worker threads, never on the event loop.

Outage: a failed send, or a failed connectivity probe, marks the broker down. While it is down, or
while the spool still holds records, `publish` appends to the spool (so order is kept) and returns;
a drain task sends the spool's head, oldest first, once the broker is back. When the spool is full
`publish` waits, which is the backpressure the OTLP receivers turn into 503. After an outage the
producer is recreated: a restarted broker may not know its producer id (UnknownProducerIdError).

Consumer: `kafka_consumer.py` (one thread per subscription owns the KafkaConsumer).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from kafka import KafkaAdminClient, KafkaProducer
from kafka.errors import KafkaError, KafkaTimeoutError

from turnwatch.bus.base import Handler, RecordProcessor, encode_for_publish
from turnwatch.bus.config import BusConfig
from turnwatch.bus.kafka_consumer import RECORD_OVERHEAD_BYTES, ConsumerWorker, read_tail
from turnwatch.bus.ledger import OffsetLedger
from turnwatch.bus.metrics import BusMetrics
from turnwatch.bus.records import CHANGELOG, TOPICS, Record, topic_label
from turnwatch.bus.spool import DiskSpool, FifoFull, Item
from turnwatch.revisions import SeenRevisions

log = logging.getLogger("turnwatch.bus.kafka")
# kafka-python logs every refused reconnect at WARNING; the bus logs state changes itself.
logging.getLogger("kafka").setLevel(logging.ERROR)

TOPIC_ALREADY_EXISTS = 36
SPOOL_RETRY_SECONDS = 0.1


class SendFailed(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class KafkaBus:
    def __init__(self, config: BusConfig, metrics: BusMetrics, spool_dir: Path | None) -> None:
        if not config.kafka.bootstrap:
            raise ValueError("bus.kafka.bootstrap is not set")
        self.config = config
        self.kafka = config.kafka
        self.metrics = metrics
        self.bootstrap = [part.strip() for part in config.kafka.bootstrap.split(",")]
        self._executor = ThreadPoolExecutor(max_workers=4, thread_name_prefix="turnwatch-kafka")
        self._producer: KafkaProducer | None = None
        self._producer_lock = asyncio.Lock()
        self._up = False
        self._up_event = asyncio.Event()
        self._spool_changed = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._dedupe: dict[str, SeenRevisions] = {}
        self.spool: DiskSpool | None = None
        if config.spool.enabled and spool_dir is not None:
            self.spool = DiskSpool(
                spool_dir / "kafka", config.spool.max_bytes, config.spool.segment_bytes
            )
        metrics.broker_up.set(0)
        self._update_spool_gauges()

    # --- lifecycle -------------------------------------------------------------------------

    def subscribe(self, topics: Sequence[str], group: str) -> None:
        """Nothing to do: a Kafka consumer group reads every record of its topics by itself."""

    async def start(self) -> None:
        await self._probe()
        self._tasks = [
            asyncio.create_task(self._probe_loop(), name="kafka-probe"),
            asyncio.create_task(self._drain_loop(), name="kafka-spool-drain"),
        ]

    async def close(self) -> int:
        """Nothing is lost here: what the broker has not acknowledged is in the spool, or still
        in the publishing caller's hands (which counts it)."""
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        producer, self._producer = self._producer, None
        if producer is not None:
            # Flush what is in flight (SIGTERM path); anything unacknowledged is still in the
            # caller's hands or in the spool, so a timeout here loses nothing acknowledged.
            await self._run(self._close_producer, producer)
        self._executor.shutdown(wait=False, cancel_futures=True)
        if self.spool is not None:
            self.spool.close()
        return 0

    def _close_producer(self, producer: KafkaProducer) -> None:
        with contextlib.suppress(Exception):
            producer.flush(timeout=self.kafka.request_timeout_ms / 1000)
        with contextlib.suppress(Exception):
            producer.close(timeout=2)

    async def _run(self, function, *args):
        return await asyncio.get_running_loop().run_in_executor(self._executor, function, *args)

    # --- connectivity ----------------------------------------------------------------------

    def _ensure_topics(self) -> None:
        """Create missing topics. A fresh admin client each time: one that saw the broker go
        away does not reconnect promptly, and this doubles as the connectivity probe."""
        admin = KafkaAdminClient(
            bootstrap_servers=self.bootstrap,
            client_id=f"{self.kafka.client_id}-admin",
            request_timeout_ms=min(self.kafka.request_timeout_ms, 5_000),
            bootstrap_timeout_ms=3_000,
        )
        try:
            # Apache Kafka accepts 1 MB per record unless the topic says otherwise; turnwatch's
            # own cap (`bus.max_record_bytes`) is the one that should decide.
            record_limit = str(self.config.max_record_bytes + RECORD_OVERHEAD_BYTES)
            # The changelog keeps each key's latest state (a conversation's last revision),
            # and forgets a trace's link with age (README: partition moves).
            changelog = {
                "cleanup.policy": "compact,delete",
                "retention.ms": str(self.kafka.changelog_retention_seconds * 1000),
            }
            topics = {
                topic: {
                    "num_partitions": self.kafka.partitions,
                    "replication_factor": self.kafka.replication_factor,
                    "configs": {
                        "max.message.bytes": record_limit,
                        **(changelog if topic == CHANGELOG else {}),
                    },
                }
                for topic in TOPICS
            }
            response = admin.create_topics(topics, raise_errors=False)
            for entry in response.get("topics", []):
                if entry.get("error_code") not in (0, TOPIC_ALREADY_EXISTS):
                    raise KafkaError(f"create topic failed: error {entry.get('error_code')}")
        finally:
            admin.close()

    def _new_producer(self) -> KafkaProducer:
        compression = None if self.kafka.compression == "none" else self.kafka.compression
        return KafkaProducer(
            bootstrap_servers=self.bootstrap,
            client_id=self.kafka.client_id,
            acks="all",
            enable_idempotence=True,
            compression_type=compression,
            linger_ms=self.kafka.linger_ms,
            batch_size=256 * 1024,
            request_timeout_ms=self.kafka.request_timeout_ms,
            delivery_timeout_ms=self.kafka.delivery_timeout_ms,
            max_block_ms=self.kafka.request_timeout_ms,
            max_request_size=self.config.max_record_bytes + RECORD_OVERHEAD_BYTES,
            bootstrap_timeout_ms=3_000,
        )

    async def _probe(self) -> bool:
        try:
            await self._run(self._ensure_topics)
            if not self._up or self._producer is None:
                await self._replace_producer()
        except Exception as exc:
            self._mark_down(type(exc).__name__)
            return False
        if not self._up:
            log.info("kafka broker reachable", extra={"spooled": self.spooled_count})
        self._up = True
        self._up_event.set()
        self.metrics.broker_up.set(1)
        return True

    async def _replace_producer(self) -> None:
        async with self._producer_lock:
            old, self._producer = self._producer, None
            if old is not None:
                await self._run(self._close_producer, old)
            self._producer = await self._run(self._new_producer)

    def _mark_down(self, reason: str) -> None:
        if self._up:
            log.warning("kafka broker unreachable", extra={"reason": reason})
        self._up = False
        self._up_event.clear()
        self.metrics.broker_up.set(0)

    async def _probe_loop(self) -> None:
        while True:
            await asyncio.sleep(self.kafka.probe_interval_seconds)
            await self._probe()

    def readiness(self) -> str | None:
        if self._up:
            return None
        return f"kafka broker unreachable ({self.spooled_count} records spooled)"

    @property
    def spooled_count(self) -> int:
        return len(self.spool) if self.spool is not None else 0

    # --- producing -------------------------------------------------------------------------

    def _send_blocking(self, producer: KafkaProducer, item: Item) -> None:
        try:
            future = producer.send(item.topic, key=item.key.encode(), value=item.value)
            future.get(timeout=self.kafka.delivery_timeout_ms / 1000 + 5)
        except KafkaTimeoutError:
            raise SendFailed("timeout") from None
        except KafkaError:
            raise SendFailed("broker_error") from None

    async def _send(self, item: Item) -> None:
        producer = self._producer
        if producer is None or not self._up:
            raise SendFailed("broker_error")
        try:
            await self._run(self._send_blocking, producer, item)
        except SendFailed as exc:
            self.metrics.produce_failures.labels(topic_label(item.topic), exc.reason).inc()
            self._mark_down(exc.reason)
            raise
        self.metrics.produced.labels(topic_label(item.topic)).inc()

    async def publish(self, topic: str, key: str, record: Record) -> None:
        value = encode_for_publish(self.metrics, log, topic, record, self.config.max_record_bytes)
        item = Item(topic, key, value)
        while True:
            if self.spool is not None and (not self._up or len(self.spool) > 0):
                await self._spool_append(item)
                return
            try:
                await self._send(item)
                return
            except SendFailed:
                if self.spool is None:
                    # No spool: hold the record (and so the caller) until the broker is back.
                    await self._up_event.wait()

    async def _spool_append(self, item: Item) -> None:
        assert self.spool is not None
        waited = False
        while True:
            try:
                # A small buffered write; kept on the loop so the spool needs no lock.
                self.spool.append(item)
                break
            except FifoFull:
                if not waited:
                    self.metrics.spool_full.inc()
                    log.warning("spool full; publish waits", extra={"spooled": len(self.spool)})
                    waited = True
                await asyncio.sleep(SPOOL_RETRY_SECONDS)
        self.metrics.spooled.inc()
        self._update_spool_gauges()
        self._spool_changed.set()

    async def _drain_loop(self) -> None:
        """Send the spool's records oldest first while the broker is up."""
        spool = self.spool
        if spool is None:
            return
        while True:
            if len(spool) == 0:
                self._spool_changed.clear()
                await self._spool_changed.wait()
                continue
            await self._up_event.wait()
            item = spool.peek()
            if item is None:
                continue
            try:
                await self._send(item)
            except SendFailed:
                continue
            spool.pop()
            self._update_spool_gauges()
            if len(spool) == 0:
                log.info("spool drained", extra={"spooled": 0})

    def _update_spool_gauges(self) -> None:
        self.metrics.spool_records.set(self.spooled_count)
        self.metrics.spool_bytes.set(self.spool.size_bytes if self.spool is not None else 0)

    async def idle(self, timeout: float) -> bool:
        """Wait for the spool to empty (the broker has everything this process produced)."""
        deadline = time.monotonic() + timeout
        while self.spooled_count and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        return self.spooled_count == 0

    # --- consuming -------------------------------------------------------------------------

    async def read_tail(self, topic: str, partitions: set[int], limit: int) -> list:
        """The last `limit` records of each of `partitions` (kafka_consumer.read_tail), read
        within half the poll interval, so a restore never costs this member its group seat."""
        timeout = self.kafka.max_poll_interval_ms / 2000
        return await self._run(read_tail, self.bootstrap, topic, partitions, limit, timeout)

    async def consume(
        self,
        topics: Sequence[str],
        group: str,
        handler: Handler,
        stop: asyncio.Event,
        ledger: OffsetLedger | None = None,
    ) -> None:
        while not self._up:
            await self._probe()
            if not self._up:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), self.kafka.probe_interval_seconds)
                if stop.is_set():
                    return
        dedupe = self._dedupe.setdefault(group, SeenRevisions(self.config.dedupe_entries))
        processor = RecordProcessor(self, handler, self.config.max_record_bytes, dedupe, ledger)
        worker = ConsumerWorker(
            self, list(topics), group, processor, asyncio.get_running_loop(), ledger
        )
        thread_stop = threading.Event()
        waiter = asyncio.create_task(stop.wait())
        # A dedicated thread (not the executor): it lives as long as the subscription.
        done = asyncio.get_running_loop().create_future()

        def run() -> None:
            try:
                worker.run(thread_stop)
            finally:
                done.get_loop().call_soon_threadsafe(lambda: done.done() or done.set_result(None))

        threading.Thread(target=run, name=f"turnwatch-consume-{group}", daemon=True).start()
        try:
            await asyncio.wait({waiter, done}, return_when="FIRST_COMPLETED")
            thread_stop.set()
            await done
        finally:
            # Also on cancellation: the thread finishes the record in hand, commits, closes.
            thread_stop.set()
            waiter.cancel()
