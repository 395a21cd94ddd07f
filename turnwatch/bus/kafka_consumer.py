"""The Kafka bus's consuming side: one thread per subscription owns the (not thread-safe)
KafkaConsumer.

Auto-commit is off; each record's outputs are published (on the event loop) before its offset
counts as done; done offsets are committed after every batch, on revocation and on close, but
never while the process's spool holds records (see `_spool_holds_outputs`); a lost partition's
offsets are discarded. With an `OffsetLedger`, a done offset is committed only up to the oldest
record a handler still holds (ledger.py): both bounds apply, so what is committed is the lower.
Lag is the partition high watermark minus the next offset to process. Partitions the ledger
says this member gained are handed to its `on_gained` (awaited) before any of their records.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from typing import TYPE_CHECKING

from kafka import KafkaConsumer
from kafka.consumer.subscription_state import ConsumerRebalanceListener
from kafka.errors import KafkaError
from kafka.structs import OffsetAndMetadata, TopicPartition

from turnwatch.bus.base import RecordProcessor
from turnwatch.bus.ledger import OffsetLedger
from turnwatch.bus.records import topic_label

if TYPE_CHECKING:
    from turnwatch.bus.kafka import KafkaBus

log = logging.getLogger("turnwatch.bus.kafka")

RECORD_OVERHEAD_BYTES = 64 * 1024
"""Room for the key, headers and batch framing around a record of `bus.max_record_bytes`."""


class ConsumerWorker(ConsumerRebalanceListener):
    """Owns one KafkaConsumer on its own thread; processing runs on the bus's event loop.

    One consumer per group and process, subscribed to all the group's topics: two members of
    one group with different subscriptions are legal but brokers assign them unreliably."""

    def __init__(
        self,
        bus: KafkaBus,  # the producing side: publishes each record's outputs
        topics: list[str],
        group: str,
        processor: RecordProcessor,
        loop: asyncio.AbstractEventLoop,
        ledger: OffsetLedger | None = None,
    ) -> None:
        self.bus = bus
        self.ledger = ledger
        self.topics = topics
        self.group = group
        self.processor = processor
        self.loop = loop
        self.consumer: KafkaConsumer | None = None
        # Next offset to process per partition, updated by this thread and read by rebalance
        # callbacks, which kafka-python 3.x runs on its own IO thread.
        self._done: dict[TopicPartition, int] = {}
        self._committed: dict[TopicPartition, int] = {}
        self._owned: set[TopicPartition] = set()
        self._revoking: set[TopicPartition] = set()
        self._lock = threading.Lock()
        self._lag_at = 0.0

    def _new_consumer(self) -> KafkaConsumer:
        kafka = self.bus.kafka
        consumer = KafkaConsumer(
            bootstrap_servers=self.bus.bootstrap,
            client_id=f"{kafka.client_id}-{self.group}",
            group_id=self.group,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            max_poll_records=kafka.max_poll_records,
            max_poll_interval_ms=kafka.max_poll_interval_ms,
            session_timeout_ms=kafka.session_timeout_ms,
            heartbeat_interval_ms=kafka.heartbeat_interval_ms,
            # A JoinGroup answer can take the whole rebalance timeout (max_poll_interval_ms);
            # a shorter request timeout aborts every join (the reason 2.x defaulted to 305 s).
            request_timeout_ms=max(kafka.request_timeout_ms, kafka.max_poll_interval_ms + 5_000),
            fetch_max_bytes=max(52_428_800, self.bus.config.max_record_bytes * 2),
            max_partition_fetch_bytes=self.bus.config.max_record_bytes + RECORD_OVERHEAD_BYTES,
            bootstrap_timeout_ms=3_000,
        )
        consumer.subscribe(self.topics, listener=self)
        return consumer

    # Rebalance callbacks (kafka-python's IO thread): must not block.
    def on_partitions_revoked(self, revoked) -> None:
        spooled = self._spool_holds_outputs()
        with self._lock:
            offsets = {} if spooled else self._pending(set(revoked))
            self._owned -= set(revoked)
            self._revoking |= set(revoked)
        if offsets and self.consumer is not None:
            # Asynchronous on purpose: it is queued ahead of the rejoin on the same connection.
            self.consumer.commit_async(offsets, callback=self._commit_callback)
        if self.ledger is not None:
            self.ledger.revoke((tp.topic, tp.partition) for tp in revoked)

    def on_partitions_assigned(self, assigned) -> None:
        with self._lock:
            self._owned |= set(assigned)
            # kafka-python keeps the fetch position of a partition that comes straight back,
            # so what was done on it still counts: forgetting it would leave offsets that a
            # handler releases later uncommitted until the partition's next record. Only a
            # partition that moved away starts over if it returns.
            for tp in self._revoking - set(assigned):
                self._done.pop(tp, None)
                self._committed.pop(tp, None)
            self._revoking = set()
        if self.ledger is not None:
            self.ledger.assign((tp.topic, tp.partition) for tp in assigned)

    def on_partitions_lost(self, lost) -> None:
        # Evicted: another member may already own these; committing would be refused anyway.
        with self._lock:
            self._owned -= set(lost)
            for tp in lost:
                self._done.pop(tp, None)
        if self.ledger is not None:
            self.ledger.lose((tp.topic, tp.partition) for tp in lost)

    def _pending(self, partitions: set[TopicPartition]) -> dict[TopicPartition, OffsetAndMetadata]:
        ledger = self.ledger
        offsets = {
            tp: ledger.committable(tp.topic, tp.partition, done) if ledger is not None else done
            for tp, done in self._done.items()
            if tp in partitions
        }
        return {
            tp: OffsetAndMetadata(offset, "", -1)
            for tp, offset in offsets.items()
            if self._committed.get(tp) != offset
        }

    def _commit_callback(self, offsets, response) -> None:
        outcome = "failed" if isinstance(response, Exception) else "committed"
        self.bus.metrics.commits.labels(outcome).inc()
        if outcome == "committed":
            with self._lock:
                for tp, meta in offsets.items():
                    self._committed[tp] = meta.offset

    def _spool_holds_outputs(self) -> bool:
        """A record whose outputs went to the spool is done but not yet safe: the spool lives in
        this process's data directory, which a replacement process may not get (a new pod), so
        its offset waits until the spool is empty. The spool only lets go of a record once the
        broker acknowledged it, so an empty spool means every earlier output is on the broker.
        A crash meanwhile means redelivery, deduped downstream, never loss."""
        return self.bus.spooled_count > 0

    def _commit(self, consumer: KafkaConsumer) -> None:
        if self._spool_holds_outputs():
            return
        with self._lock:
            offsets = self._pending(set(self._owned))
        if not offsets:
            return
        try:
            consumer.commit(offsets)
        except KafkaError as exc:
            # Typically a rebalance in progress: the records will be redelivered and deduped.
            self.bus.metrics.commits.labels("failed").inc()
            log.warning("offset commit failed", extra={"error": type(exc).__name__})
            return
        self.bus.metrics.commits.labels("committed").inc()
        with self._lock:
            for tp, meta in offsets.items():
                self._committed[tp] = meta.offset

    def _export_lag(self, consumer: KafkaConsumer) -> None:
        now = time.monotonic()
        if now - self._lag_at < 1.0:
            return
        self._lag_at = now
        lag = dict.fromkeys(self.topics, 0)
        with self._lock:
            owned = set(self._owned)
            done = dict(self._done)
        for tp in owned:
            try:
                highwater = consumer.highwater(tp)
            except KafkaError:
                continue
            if highwater is None:
                continue
            position = done.get(tp)
            if position is None:
                with contextlib.suppress(KafkaError):
                    position = consumer.position(tp, timeout_ms=100)
            if position is not None:
                lag[tp.topic] = lag.get(tp.topic, 0) + max(0, highwater - position)
        for topic, value in lag.items():
            self.bus.metrics.lag.labels(topic_label(topic)).set(value)

    def run(self, stop: threading.Event) -> None:
        while not stop.is_set():
            try:
                self.consumer = self._new_consumer()
                break
            except Exception as exc:
                log.warning("kafka consumer start failed", extra={"error": type(exc).__name__})
                stop.wait(self.bus.kafka.probe_interval_seconds)
        consumer = self.consumer
        if consumer is None:
            return
        log.info("kafka consumer started", extra={"topics": self.topics, "group": self.group})
        try:
            while not stop.is_set():
                try:
                    batch = consumer.poll(timeout_ms=500)
                except KafkaError as exc:
                    log.warning("kafka poll failed", extra={"error": type(exc).__name__})
                    stop.wait(1.0)
                    continue
                self._restore_gained()
                skipped: dict[TopicPartition, int] = {}
                for tp, records in batch.items():
                    for record in records:
                        with self._lock:
                            if tp not in self._owned:
                                skipped[tp] = record.offset
                                break  # revoked mid-batch: the new owner takes it from here
                        self._process(record)
                        with self._lock:
                            self._done[tp] = record.offset + 1
                        if stop.is_set():
                            break
                    if stop.is_set():
                        break
                self._seek_back(consumer, skipped)
                self._commit(consumer)
                self._export_lag(consumer)
        finally:
            self._commit(consumer)
            with contextlib.suppress(Exception):
                consumer.close(autocommit=False)
            log.info("kafka consumer stopped", extra={"topics": self.topics, "group": self.group})

    def _restore_gained(self) -> None:
        """Before the records of partitions new to this member: their handler's restore (the
        sessionizer reads its changelog). It must not fail; if it does, the records still go."""
        ledger = self.ledger
        if ledger is None or ledger.on_gained is None:
            return
        gained = ledger.take_gained()
        if not gained:
            return
        try:
            asyncio.run_coroutine_threadsafe(ledger.on_gained(gained), self.loop).result()
        except Exception as exc:
            log.error("partition restore failed", extra={"error": type(exc).__name__})

    def _seek_back(self, consumer: KafkaConsumer, skipped: dict[TopicPartition, int]) -> None:
        """A partition revoked mid-batch and assigned straight back (an eager rebalance) keeps
        its fetch position, past the records skipped: fetch those again."""
        with self._lock:
            back = {tp: offset for tp, offset in skipped.items() if tp in self._owned}
        for tp, offset in back.items():
            with contextlib.suppress(KafkaError, ValueError, AssertionError):
                consumer.seek(tp, offset)

    def _process(self, record) -> None:
        key = record.key.decode(errors="replace") if record.key is not None else None
        work = self.processor.handle(
            record.topic, key, record.value, record.partition, record.offset
        )
        # Wait however long publishing takes: during an outage the outputs go to the spool.
        asyncio.run_coroutine_threadsafe(work, self.loop).result()


def read_tail(
    bootstrap: list[str], topic: str, partitions: set[int], limit: int, timeout: float
) -> list:
    """The last `limit` records (or fewer) of each of `partitions` of `topic`, read to the end
    offsets as they were at the start, oldest first per partition. No group: nothing is
    committed. Raises KafkaError, or TimeoutError when the end is not reached in `timeout`."""
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap, enable_auto_commit=False, bootstrap_timeout_ms=3_000
    )
    try:
        wanted = [TopicPartition(topic, partition) for partition in sorted(partitions)]
        consumer.assign(wanted)
        ends = consumer.end_offsets(wanted)
        begins = consumer.beginning_offsets(wanted)
        open_parts = {tp for tp in wanted if ends[tp] > begins[tp]}
        for tp in open_parts:
            consumer.seek(tp, max(begins[tp], ends[tp] - limit))
        records: list = []
        deadline = time.monotonic() + timeout
        while open_parts:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{len(open_parts)} partitions not read to their end")
            for tp, batch in consumer.poll(timeout_ms=200).items():
                records.extend(record for record in batch if record.offset < ends[tp])
                if consumer.position(tp) >= ends[tp]:
                    open_parts.discard(tp)
        return records
    finally:
        consumer.close(autocommit=False)
