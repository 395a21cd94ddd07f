"""The bus interface, and what every consumer does with a record whatever the backend.

publish(topic, key, record) returns once the record is safe: acknowledged by the broker (all
in-sync replicas), in the embedded queue, or in the on-disk spool. consume(topics, group, handler)
hands each record to the handler, publishes what the handler returns, and only then acknowledges
the record (commits its offset), so a crash between the two means redelivery, never loss.
Redeliveries are dropped by (topic, key, revision) per consumer group within one process (two
groups reading one topic each see every record); across processes (a partition moving to another
scorer) the next stage drops them the same way. A consumer given an `OffsetLedger` (the
sessionizer role; the exporter role with evaluation events, on Kafka or the embedded bus with its
spool) may hold records past its handler; it dedupes nothing itself, since a held
record it is given again is one it dropped at a partition move and must take again.
`subscribe` declares a group before anything is
published: the embedded bus gives each group its own queue; Kafka's groups need nothing.
"""

from __future__ import annotations

import asyncio
import base64
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol

from turnwatch.bus.ledger import OffsetLedger
from turnwatch.bus.metrics import BusMetrics
from turnwatch.bus.records import (
    DEAD_LETTER,
    DeadLetter,
    Output,
    Record,
    RecordTooLarge,
    Undecodable,
    check_output,
    decode,
    encode,
    revision_of,
    topic_label,
)
from turnwatch.revisions import SeenRevisions

log = logging.getLogger("turnwatch.bus")

Handler = Callable[[str, Record], Awaitable[Sequence[Output]]]
"""(topic, validated record) -> the records to publish before this one is acknowledged."""


class Bus(Protocol):
    metrics: BusMetrics

    async def start(self) -> None: ...
    def subscribe(self, topics: Sequence[str], group: str) -> None: ...
    async def publish(self, topic: str, key: str, record: Record) -> None: ...
    async def consume(
        self,
        topics: Sequence[str],
        group: str,
        handler: Handler,
        stop: asyncio.Event,
        ledger: OffsetLedger | None = None,
    ) -> None: ...
    def readiness(self) -> str | None: ...
    async def idle(self, timeout: float) -> bool: ...
    async def close(self) -> int:
        """Release the bus; return how many records it held only in memory (lost, counted)."""
        ...


def encode_for_publish(
    metrics: BusMetrics, logger: logging.Logger, topic: str, record: Record, max_bytes: int
) -> bytes:
    """What `publish` sends; a record over `max_bytes` is counted, logged and raised."""
    try:
        return encode(record, max_bytes)
    except RecordTooLarge:
        metrics.rejected.labels(topic_label(topic), "too_large").inc()
        logger.warning("record too large; rejected", extra={"topic": topic_label(topic)})
        raise


class RecordProcessor:
    """Decode -> dedupe -> handler -> publish outputs; poison and handler errors go to the DLQ."""

    def __init__(
        self,
        bus: Bus,
        handler: Handler,
        max_record_bytes: int,
        dedupe: SeenRevisions,
        ledger: OffsetLedger | None = None,
    ):
        self.bus = bus
        self.handler = handler
        self.max_record_bytes = max_record_bytes
        self.dedupe = dedupe
        self.ledger = ledger

    async def handle(
        self, topic: str, key: str | None, value: bytes | None, partition: int, offset: int
    ) -> str:
        metrics = self.bus.metrics
        label = topic_label(topic)
        try:
            record = decode(topic, value, self.max_record_bytes)
        except Undecodable as exc:
            await self._dead_letter(topic, key, value, partition, offset, exc.reason)
            metrics.consumed.labels(label, "dead_lettered").inc()
            return "dead_lettered"
        identity = (key or "", revision_of(record), topic)
        if self.ledger is None and self.dedupe.seen(*identity):
            metrics.consumed.labels(label, "duplicate").inc()
            return "duplicate"
        try:
            if self.ledger is not None:
                self.ledger.begin(topic, partition, offset)
            try:
                outputs = await self.handler(topic, record)
            finally:
                if self.ledger is not None:
                    self.ledger.end()
            for output in outputs:
                check_output(output)
        except Exception as exc:
            # A handler bug on one record must not stall its partition: park it and move on.
            log.warning(
                "handler failed; record dead-lettered",
                extra={"topic": topic, "partition": partition, "offset": offset,
                       "error": type(exc).__name__},
            )  # fmt: skip
            await self._dead_letter(topic, key, value, partition, offset, "handler_error")
            metrics.consumed.labels(label, "handler_error").inc()
            return "handler_error"
        for output in outputs:
            try:
                await self.bus.publish(output.topic, output.key, output.record)
            except RecordTooLarge:
                continue  # counted by publish; the rest of the outputs still go out
        self.dedupe.add(*identity)
        metrics.consumed.labels(label, "processed").inc()
        return "processed"

    async def _dead_letter(
        self,
        topic: str,
        key: str | None,
        value: bytes | None,
        partition: int,
        offset: int,
        reason: str,
    ) -> None:
        self.bus.metrics.dead_lettered.labels(reason).inc()
        payload = (value or b"")[: self.max_record_bytes // 2]
        record = DeadLetter(
            reason=reason,
            source_topic=topic,
            partition=partition,
            offset=offset,
            key=key,
            value_base64=base64.b64encode(payload).decode(),
            value_truncated=len(value or b"") > len(payload),
        )
        await self.bus.publish(DEAD_LETTER, key or "", record)
