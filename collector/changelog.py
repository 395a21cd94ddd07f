"""The sessionizer's changelog: what a member that takes a partition over must know of the
conversations the previous owner already finished with.

Offsets are committed once a session is handed on, and a link's once its trace has been quiet
for an idle timeout, so a member that takes a partition over after that replays nothing of them.
Without more it would not know the trace's conversation (a keyless span arriving later became a
session of its own, keyed by the trace id) nor the conversation's last revision (a continuation
through a collector whose clock is behind got a lower number than the one published). So, as
Kafka Streams does with changelog topics, the owner writes small state records to
`turnwatch.sessionizer.changelog`, keyed like the partition's observations (the same keys and
partition count, so the same partition number), and a member that gains a partition reads that
partition's changelog to its end before any of its observations (`OffsetLedger.on_gained`):

- a link (trace id -> conversation key), written when a link record names a trace anew;
- a conversation's last revision (its number, its latest arrival stamp, the highest offset of
  its observations per partition), written when it closes.

Both are written by a task of their own, so no partition waits for them, and what they came
from stays held in the ledger until they are on the broker: the link record, the session's
observations. So a record's offset is never committed before the state it leaves behind.

Sealed as observations are (keys and links come from conversation and user ids), with the kind
authenticated. Bounded: a restore reads at most `routing.max_traces +
sessions.max_remembered_sessions` records per partition from its end, into the memories a member
keeps anyway (links up to `routing.max_traces`, revisions up to
`sessions.max_remembered_sessions`). A record that cannot be read is logged and counted, and the
others are still restored; a changelog that cannot be read at all leaves the member as it was
before there was one (logged and counted), never stopped.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from turnwatch.collector.metrics import CollectorMetrics
from turnwatch.collector.revision_clock import HandedOver, SessionRevisions
from turnwatch.collector.sealing import Sealer, Unsealable
from turnwatch.collector.sessionizer import TRACE_KEY_SOURCE, ClosedSession

from turnwatch.bus.ledger import OffsetLedger, Position
from turnwatch.bus.records import (
    CHANGELOG,
    OBSERVATIONS,
    ChangelogRecord,
    Undecodable,
    decode,
)
from turnwatch.lru import LRU

log = logging.getLogger("turnwatch.collector")

Kind = Literal["conversation", "link"]
ReadTail = Callable[[str, set[int], int], Awaitable[list]]
Publish = Callable[[str, str, ChangelogRecord], Awaitable[None]]
RouteKey = Callable[[str, str], str]
MAX_JOINED_BY_TRACE = 1024
"""About 20 KiB of identities: a link stays uncommitted only while its trace is active (and an
idle timeout after), so what can be forwarded again is the last turns' tool and keyless spans."""
MAX_RECORD_BYTES = 64 * 1024
"""A changelog record holds a few ids and numbers: anything larger is not one of ours."""


class _State(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ConversationState(_State):
    key: str = Field(min_length=1)
    """The sessionizer's (service-scoped) session key."""
    revision: int = Field(gt=0)
    last_arrival: int = Field(ge=0)
    offsets: dict[int, int]
    """Partition of `turnwatch.observations` -> highest offset of an observation in it."""
    joined_by_trace: list[int] = Field(default_factory=list, max_length=MAX_JOINED_BY_TRACE)
    """Arrival identities of its observations that joined through their trace, the latest
    `MAX_JOINED_BY_TRACE`: a trace's next owner forwards those again while the trace's link is
    uncommitted, and the conversation's next owner recognises them by these."""


class LinkState(_State):
    trace_id: str = Field(min_length=1)
    conversation_key: str = Field(min_length=1)


STATES: dict[Kind, type[_State]] = {"conversation": ConversationState, "link": LinkState}


class Unreadable(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class PartitionChangelog:
    def __init__(
        self,
        sealer: Sealer,
        route_key: RouteKey,
        ledger: OffsetLedger,
        publish: Publish,
        revisions: SessionRevisions,
        links: LRU[str, str],
        metrics: CollectorMetrics,
        read_tail: ReadTail | None,
        limit: int,
        queue_size: int,
    ) -> None:
        self.sealer = sealer
        self.route_key = route_key
        self.ledger = ledger
        self.publish = publish
        self.revisions = revisions
        self.links = links
        self.metrics = metrics
        self.read_tail = read_tail
        self.limit = limit
        """Records read per partition from its end: as many as the memories above hold."""
        self.queue: asyncio.Queue[tuple[Kind, str, ChangelogRecord, list[Position]]]
        self.queue = asyncio.Queue(maxsize=queue_size)

    # Writing.
    def link(self, trace_id: str, conversation_key: str, position: Position) -> None:
        """A new link, learnt from the link record at `position`: queued, that record held
        until it is on the broker (the intake holds it longer anyway, while its trace is
        active). Not published by the record's handler: the partition would wait for it."""
        state = LinkState(trace_id=trace_id, conversation_key=conversation_key)
        self._queue("link", self.route_key("trace", trace_id), state, [position])

    def closed(self, closed: ClosedSession, held: list[Position]) -> None:
        """A session closed (`CollectorPipeline.on_closed`): queue its conversation's state,
        holding its observations until the record is on the broker. Sessions of a trace that
        named no conversation, and sessions without stamps, have nothing to hand over."""
        session = closed.state
        if session.key_source == TRACE_KEY_SOURCE or not held or not session.last_arrival:
            return
        offsets: dict[int, int] = {}
        for position in held:
            offsets[position.partition] = max(offsets.get(position.partition, -1), position.offset)
        state = ConversationState(
            key=session.key,
            revision=session.revision,
            last_arrival=session.last_arrival,
            offsets=offsets,
            joined_by_trace=session.joined_by_trace[-MAX_JOINED_BY_TRACE:],
        )
        key = self.route_key("conversation", session.conversation_key)
        self._queue("conversation", key, state, held)

    def _queue(self, kind: Kind, key: str, state: _State, held: list[Position]) -> None:
        try:
            self.queue.put_nowait((kind, key, self._seal(kind, state), held))
        except asyncio.QueueFull:
            # The bus is that far behind: the next owner takes this over as without a changelog.
            self.metrics.changelog_dropped.labels("queue_full").inc()
            return
        for position in held:
            self.ledger.hold(position)

    def _seal(self, kind: Kind, state: _State) -> ChangelogRecord:
        sealed = self.sealer.seal(state.model_dump_json().encode(), _associated(kind))
        return ChangelogRecord(kind=kind, sealed=sealed)

    async def run(self) -> None:
        while True:
            kind, key, record, held = await self.queue.get()
            try:
                await self.publish(CHANGELOG, key, record)
                self.metrics.changelog_written.labels(kind).inc()
            except Exception as exc:
                # Refused by the bus (it waits out outages itself): the next owner numbers this
                # conversation as it did before the changelog.
                self.metrics.changelog_dropped.labels("publish_error").inc()
                log.warning("changelog publish failed", extra={"error": type(exc).__name__})
            finally:
                self.ledger.release(held)
                self.queue.task_done()

    async def drain(self) -> None:
        with contextlib.suppress(asyncio.CancelledError):
            await self.queue.join()

    # Restoring.
    async def restore(self, partitions: set[tuple[str, int]]) -> None:
        """Before the first observation of newly gained partitions: their changelog, read to
        its end (`OffsetLedger.on_gained`)."""
        numbers = {partition for topic, partition in partitions if topic == OBSERVATIONS}
        if not numbers or self.read_tail is None:
            return
        started = time.monotonic()
        try:
            records = await self.read_tail(CHANGELOG, numbers, self.limit)
        except Exception as exc:
            self.metrics.changelog_restored.labels("read_failed").inc(len(numbers))
            log.error(
                "changelog unreadable; partitions taken over without it",
                extra={"partitions": len(numbers), "error": type(exc).__name__},
            )
            return
        restored = unreadable = 0
        for record in records:
            try:
                self._apply(record.value)
                restored += 1
            except Unreadable as exc:
                unreadable += 1
                self.metrics.changelog_restored.labels("unreadable").inc()
                log.warning(
                    "changelog record unreadable; skipped",
                    extra={"reason": exc.reason, "partition": record.partition,
                           "offset": record.offset},
                )  # fmt: skip
        self.metrics.changelog_restored.labels("restored").inc(restored)
        log.info(
            "changelog restored",
            extra={
                "partitions": len(numbers),
                "records": restored,
                "unreadable": unreadable,
                "seconds": round(time.monotonic() - started, 3),
            },
        )

    def _apply(self, value: bytes | None) -> None:
        try:
            record = decode(CHANGELOG, value, MAX_RECORD_BYTES)
        except Undecodable as exc:
            raise Unreadable(exc.reason) from None
        assert isinstance(record, ChangelogRecord)  # the topic's model
        try:
            payload = self.sealer.open(record.sealed, _associated(record.kind))
        except Unsealable:
            raise Unreadable("unsealable") from None
        try:
            state = STATES[record.kind].model_validate_json(payload)
        except ValidationError:
            raise Unreadable("invalid") from None
        if isinstance(state, LinkState):
            self.links.put(state.trace_id, state.conversation_key)
        elif isinstance(state, ConversationState):
            handed = HandedOver(
                state.revision,
                state.last_arrival,
                state.offsets,
                frozenset(state.joined_by_trace),
            )
            self.revisions.hand_over(state.key, handed)


def _associated(kind: Kind) -> bytes:
    return f"changelog {kind}".encode()
