"""The collector in the distributed layout: decode, then route observations instead of
sessionizing them.

A chatbot with several replicas spreads one conversation over several collectors, so no
collector sees a whole conversation. Each decoded observation is sealed (`sealing.py`) and
published to `turnwatch.observations` keyed by its conversation, so one sessionizer member gets
all of it. A span that names no conversation joins one through its trace: if this collector has
seen its trace mapped, it goes with that conversation at once; otherwise it is keyed by its trace
id, and the first span that names the trace's conversation also publishes a link (keyed by the
trace too), from which the trace's owner forwards the waiting spans (`intake.py`). That is the
OpenTelemetry Collector's two-tier routing, by trace id first, then by conversation.

One record per route and OTLP request (split past `RECORD_CONTENT_BYTES` of content, so a record
stays well under `bus.max_record_bytes` once encoded): `flush` runs after each request's spans
are decoded. The request path only enqueues; a task publishes, oldest first. Above the queue's
high watermark the receivers answer 503; a record that finds the queue full is dropped and
counted.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable

from turnwatch.collector.config import RoutingConfig
from turnwatch.collector.metrics import CollectorMetrics
from turnwatch.collector.observations import (
    ObservationCodec,
    Route,
    RoutedObservation,
    TraceLink,
    resolve,
)
from turnwatch.collector.records import Context, Observation
from turnwatch.collector.revision_clock import RevisionClock

from turnwatch.bus.records import OBSERVATIONS, ObservationRecord
from turnwatch.lru import LRU

log = logging.getLogger("turnwatch.collector")

Publish = Callable[[str, str, ObservationRecord], Awaitable[None]]

RECORD_CONTENT_BYTES = 1024 * 1024
"""Observation content per record; JSON and base64 take it to about twice that on the bus."""


def chunks(items: list[RoutedObservation]) -> list[list[RoutedObservation]]:
    parts: list[list[RoutedObservation]] = [[]]
    size = 0
    for item in items:
        added = item.observation.size_bytes if item.observation is not None else 0
        if parts[-1] and size + added > RECORD_CONTENT_BYTES:
            parts.append([])
            size = 0
        parts[-1].append(item)
        size += added
    return parts


class ObservationRouter:
    def __init__(
        self,
        config: RoutingConfig,
        codec: ObservationCodec,
        metrics: CollectorMetrics,
        publish: Publish,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self.codec = codec
        self.metrics = metrics
        self.publish = publish
        # Each observation's arrival stamp, from which sessionizer members number revisions.
        self.arrivals = RevisionClock(wall_clock)
        self._trace_keys: LRU[str, str] = LRU(config.max_traces)
        self._batches: dict[tuple[Route, str], list[RoutedObservation]] = {}
        self._links: dict[str, str] = {}
        self.queue: asyncio.Queue[tuple[str, ObservationRecord, int]] = asyncio.Queue(
            maxsize=config.queue_size
        )
        self._watermark = max(1, int(config.queue_size * config.high_watermark))

    def overloaded(self) -> bool:
        return self.queue.qsize() >= self._watermark

    def add(
        self, trace_id: str, context: Context, observation: Observation | None, time_ns: int
    ) -> None:
        item = RoutedObservation(trace_id, time_ns, context, observation, self.arrivals.next())
        key = context.conversation_key
        if key:
            if self._trace_keys.get(trace_id) != key:
                self._trace_keys.put(trace_id, key)
                self._links[trace_id] = key
            self._batches.setdefault(("conversation", key), []).append(item)
            return
        mapped = self._trace_keys.get(trace_id)
        if mapped is not None:
            resolve(item, mapped)
            self._batches.setdefault(("conversation", mapped), []).append(item)
        else:
            self._batches.setdefault(("trace", trace_id), []).append(item)

    def flush(self) -> None:
        """Seal and queue what this request added: one record per route."""
        batches, self._batches = self._batches, {}
        links, self._links = self._links, {}
        for (route, value), items in batches.items():
            key = self.codec.route_key(route, value)
            for part in chunks(items):
                self._enqueue(key, self.codec.seal_observations(route, part), len(part))
        for trace_id, key in links.items():
            record = self.codec.seal_links([TraceLink(trace_id, key)])
            self._enqueue(self.codec.route_key("link", trace_id), record, 0)

    def _enqueue(self, key: str, record: ObservationRecord, observations: int) -> None:
        try:
            self.queue.put_nowait((key, record, observations))
        except asyncio.QueueFull:
            self.metrics.observations_dropped.labels("queue_full").inc(max(observations, 1))
            log.warning("routing queue full; observations dropped", extra={"reason": "queue_full"})
            return
        self.metrics.routing_depth.set(self.queue.qsize())

    async def run(self) -> None:
        while True:
            key, record, observations = await self.queue.get()
            try:
                await self.publish(OBSERVATIONS, key, record)
                self.metrics.observations_routed.labels(record.route).inc(observations)
            except Exception as exc:
                # The bus waits out outages itself; what reaches here is a record it refused.
                self.metrics.observations_dropped.labels("publish_error").inc(max(observations, 1))
                log.warning("routing publish failed", extra={"error": type(exc).__name__})
            finally:
                self.queue.task_done()
                self.metrics.routing_depth.set(self.queue.qsize())

    async def drain(self) -> None:
        """Wait until every queued record is on the bus."""
        with contextlib.suppress(asyncio.CancelledError):
            await self.queue.join()
