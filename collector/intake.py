"""The sessionizer role's side of `turnwatch.observations`: from sealed records to sessions.

Observations routed by conversation go straight into the pipeline (sessionizer, sampler,
assembly, de-identification, the bus), each holding its bus position until its session has been
handed on. Observations routed by trace (their span named no conversation) wait here until a link
names their trace's conversation, then are forwarded to that conversation's owner; a trace
without a link within the idle timeout becomes a session of its own, keyed by the trace id, as in
one process. A link's record stays uncommitted until its trace has been quiet for an idle
timeout, so a member that takes the partition over knows the link too. Waiting is bounded: past
`routing.max_pending_traces` the oldest trace is sessionized at once. An end marker closes its
conversation after a short grace (`_add`). When partitions move away, whatever was buffered
from them is dropped unpublished: it was never committed, so the new owner replays it; while
they move, the idle clock stops (`_hold_idle`). Each new link is also written to the
partition's changelog (`changelog.py`), so a member that takes the partition over after the link's
record was committed still knows it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

from turnwatch.collector.changelog import PartitionChangelog
from turnwatch.collector.config import RoutingConfig
from turnwatch.collector.observations import (
    BadObservations,
    ObservationCodec,
    RoutedObservation,
    resolve,
)
from turnwatch.collector.pipeline import CollectorPipeline
from turnwatch.collector.router import Publish, chunks
from turnwatch.collector.session_keys import scoped_key

from turnwatch.bus.ledger import OffsetLedger, Position
from turnwatch.bus.records import OBSERVATIONS, ObservationRecord, Output, Record
from turnwatch.lru import LRU
from turnwatch.schema import CloseReason

log = logging.getLogger("turnwatch.collector")

Partitions = set[tuple[str, int]]
OVERLOAD_WAIT_SECONDS = 0.05


@dataclass(slots=True)
class _Waiting:
    since: float
    items: list[tuple[RoutedObservation, Position]] = field(default_factory=list)


class ObservationIntake:
    def __init__(
        self,
        pipeline: CollectorPipeline,
        codec: ObservationCodec,
        ledger: OffsetLedger,
        publish: Publish,
        config: RoutingConfig,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.pipeline = pipeline
        self.metrics = pipeline.metrics
        self.codec = codec
        self.ledger = ledger
        self.publish = publish
        self.max_pending = config.max_pending_traces
        self.idle_timeout = pipeline.config.sessions.idle_timeout_seconds
        # At most the idle timeout, so the end marker, not the idle sweep, closes the session.
        self.end_grace = min(config.end_marker_grace_seconds, self.idle_timeout)
        # Conversations whose end marker came (session key -> when to close), earliest first.
        self._ending: OrderedDict[str, float] = OrderedDict()
        # Until then a rebalance may still be delaying spans (`_hold_idle`).
        self._settling_until = 0.0
        self.clock = clock
        self.links: LRU[str, str] = LRU(config.max_traces)
        # Trace -> (its link record, last use), least recently used first: a link holds its
        # record uncommitted until its trace has been quiet for an idle timeout, so a member
        # that takes the partition over meanwhile replays the link too (what it forwards again
        # is skipped by the conversation's owner, which already has it).
        self._link_records: OrderedDict[str, tuple[Position, float]] = OrderedDict()
        self.max_links = config.max_traces
        self._waiting: OrderedDict[str, _Waiting] = OrderedDict()
        self._loop: asyncio.AbstractEventLoop | None = None
        self.changelog: PartitionChangelog | None = None
        """Set by the sessionizer role: new links are written to it, and it restores `links`."""
        ledger.on_revoked = self._revoked
        ledger.on_delivery = self._delivery

    async def handle(self, topic: str, record: Record) -> list[Output]:
        assert isinstance(record, ObservationRecord)  # the bus validated it
        self._loop = self._loop or asyncio.get_running_loop()
        while self.pipeline.overloaded():
            # Backpressure onto the partition (lag grows) rather than dropping closed sessions.
            await asyncio.sleep(OVERLOAD_WAIT_SECONDS)
        position = self.ledger.in_hand()
        if not self.ledger.owns(position.topic, position.partition):
            return []  # revoked while queued: the new owner takes it
        try:
            if record.route == "link":
                for link in self.codec.open_links(record):
                    new = self._link(link.trace_id, link.conversation_key, position)
                    if new and self.changelog is not None:
                        self.changelog.link(link.trace_id, link.conversation_key, position)
                    waiting = self._waiting.pop(link.trace_id, None)
                    if waiting is not None:
                        await self._forward(link.conversation_key, waiting.items)
            elif record.route == "trace":
                await self._take_trace_routed(self.codec.open_observations(record), position)
            else:
                for item in self.codec.open_observations(record):
                    self.ledger.hold(position)
                    self._add(item, position)
        except BadObservations as exc:
            self.metrics.observations_dropped.labels(exc.reason).inc()
            raise  # the bus parks it on the dead letter topic
        self.metrics.pending_traces.set(len(self._waiting))
        return []

    def _add(self, item: RoutedObservation, position: Position) -> None:
        """Into the pipeline; an end marker closes its conversation only after a grace without
        another span of it (`routing.end_marker_grace_seconds`). The marker is one span of the
        conversation's last turn; the others may come through other collectors, whose records
        reach this member later, or be forwarded from their trace's partition after it. Closed
        at once, the conversation lost them to a next revision of their own."""
        context, now = item.context, self.clock()
        if self.end_grace > 0 and context.conversation_key is not None:
            key = scoped_key(context.service, context.conversation_key)
            if context.is_end_marker or key in self._ending:
                context.is_end_marker = False
                settling = now < self._settling_until
                self._ending[key] = now + (self.idle_timeout if settling else self.end_grace)
                self._ending.move_to_end(key)
        self.pipeline.add_routed(item, position)

    async def _take_trace_routed(self, items: list[RoutedObservation], position: Position) -> None:
        forward: dict[str, list[tuple[RoutedObservation, Position]]] = {}
        for item in items:
            key = self.links.get(item.trace_id)
            self.ledger.hold(position)
            if key is not None:
                self._touch_link(item.trace_id)
                forward.setdefault(key, []).append((item, position))
                continue
            waiting = self._waiting.get(item.trace_id)
            if waiting is None:
                waiting = self._waiting[item.trace_id] = _Waiting(self.clock())
            waiting.items.append((item, position))
        for key, held in forward.items():
            await self._forward(key, held)
        while len(self._waiting) > self.max_pending:
            self._sessionize(self._waiting.popitem(last=False)[1])

    async def _forward(self, key: str, held: list[tuple[RoutedObservation, Position]]) -> None:
        items = [item for item, _ in held]
        for item in items:
            resolve(item, key)
        route_key = self.codec.route_key("conversation", key)
        try:
            for part in chunks(items):
                record = self.codec.seal_observations("conversation", part)
                await self.publish(OBSERVATIONS, route_key, record)
        finally:
            # Published, or refused (too large: counted by the bus, the record in hand goes to
            # the dead letter topic); holding them on would stall the partition for good.
            self.ledger.release(position for _, position in held)
        self.metrics.observations_routed.labels("forwarded").inc(len(items))

    def _link(self, trace_id: str, conversation_key: str, position: Position) -> bool:
        """Remember the link, holding its record; False when one record holds it already."""
        self.links.put(trace_id, conversation_key)
        if trace_id in self._link_records:  # another collector linked it too: one record holds
            self._touch_link(trace_id)
            return False
        self.ledger.hold(position)
        self._link_records[trace_id] = (position, self.clock())
        while len(self._link_records) > self.max_links:
            self.ledger.release([self._link_records.popitem(last=False)[1][0]])
        return True

    def _touch_link(self, trace_id: str) -> None:
        held = self._link_records.get(trace_id)
        if held is not None:
            self._link_records[trace_id] = (held[0], self.clock())
            self._link_records.move_to_end(trace_id)

    def _sessionize(self, waiting: _Waiting) -> None:
        for item, position in waiting.items:
            self.pipeline.add_routed(item, position)  # its hold moves to the session

    def sweep(self) -> None:
        """Traces that waited an idle timeout without a link become sessions of their own;
        links quiet for an idle timeout let their record be committed."""
        if self.pipeline.sessionizer.idle_held:
            return  # a rebalance under way (`_hold_idle`)
        deadline = self.clock() - self.idle_timeout
        while self._link_records and next(iter(self._link_records.values()))[1] <= deadline:
            self.ledger.release([self._link_records.popitem(last=False)[1][0]])
        while self._waiting:
            waiting = next(iter(self._waiting.values()))
            if waiting.since > deadline:
                break
            self._sessionize(self._waiting.popitem(last=False)[1])
        self.metrics.pending_traces.set(len(self._waiting))
        ended = []
        while self._ending and next(iter(self._ending.values())) <= self.clock():
            ended.append(self._ending.popitem(last=False)[0])
        self.pipeline.close_keys(ended, CloseReason.END_MARKER)

    def _delivery(self, flowing: bool) -> None:
        # A consumer thread calls this, as `_revoked`; nothing is buffered before the loop is.
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._hold_idle, not flowing)

    def _hold_idle(self, held: bool) -> None:
        """A rebalance stops delivery to every member, and each partition that moves is
        replayed by its next owner only after it: an open conversation's spans may wait there
        meanwhile (its keyless spans on its trace's partition, forwarded once the replay
        reaches them). Quiet during a handover says nothing about the conversation, so while
        delivery is stopped nothing closes on idle, and when it resumes every open session,
        waiting trace and held link gets a whole idle timeout from then. For an idle timeout
        after that an end marker is not taken for the last span either: its conversation's
        other spans may still wait on a partition being replayed, so it closes the
        conversation after an idle timeout without another span rather than the grace."""
        self.pipeline.sessionizer.hold_idle(held)
        if held:
            return
        now = self.clock()
        self._settling_until = now + self.idle_timeout
        for waiting in self._waiting.values():
            waiting.since = max(waiting.since, now)
        for trace_id, (position, used) in self._link_records.items():
            self._link_records[trace_id] = (position, max(used, now))
        for key, due in self._ending.items():
            self._ending[key] = max(due, self._settling_until)

    def _revoked(self, partitions: Partitions) -> None:
        # A consumer thread calls this; the buffers belong to the event loop.
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._drop, partitions)

    def _drop(self, partitions: Partitions) -> None:
        def moved(held: list[Position]) -> bool:
            return any((p.topic, p.partition) in partitions for p in held)

        dropped = self.pipeline.sessionizer.discard(lambda session: moved(session.held))
        for trace_id in [t for t, w in self._waiting.items() if moved([p for _, p in w.items])]:
            del self._waiting[trace_id]
        for trace_id in [t for t, (p, _) in self._link_records.items() if moved([p])]:
            del self._link_records[trace_id]  # the partition's new owner replays it
        self.pipeline.sweep()  # refreshes the gauges
        moved_away = {"partitions": len(partitions), "sessions": dropped}
        log.info("partitions moved away", extra=moved_away)
