"""Offsets held past their handler: a consumer commits only below the oldest held record.

A handler that buffers (the sessionizer role keeps observations until their session is
published; the exporter keeps score records until their evaluation events are sent) holds the
record in hand (`hold(in_hand())`, once per holder); the consumer then
commits no offset of that partition at or above it until every holder has called `release`.
A crash or a partition move therefore replays every observation of a session that was not yet
published, never loses one. A partition this member gains (not one given straight back) is
handed to `on_gained` before any of its records (the sessionizer restores its changelog there).

Thread-safe: holds and releases happen on the event loop, commits and rebalance callbacks on the
consumer's threads. The embedded bus with its spool keeps the same rule on one partition per
topic: it acknowledges (moves its cursor past) only records below the oldest held.
"""

from __future__ import annotations

import heapq
import threading
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable
from typing import NamedTuple


class Position(NamedTuple):
    topic: str
    partition: int
    offset: int
    epoch: int = 0
    """Which assignment of the partition it was read in: a partition that moves away and comes
    back is replayed, and what was held from the earlier read must not release the new holds."""


class OffsetLedger:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._holds: dict[tuple[str, int], Counter[int]] = {}
        # Per partition, a min-heap of held offsets; released ones are dropped when they surface.
        self._heaps: dict[tuple[str, int], list[int]] = {}
        self._in_hand: Position | None = None
        self._epochs: dict[tuple[str, int], int] = {}
        self.assigned: set[tuple[str, int]] = set()
        self._revoking: set[tuple[str, int]] = set()
        self._gained: set[tuple[str, int]] = set()
        self.on_gained: Callable[[set[tuple[str, int]]], Awaitable[None]] | None = None
        """Run on the event loop, awaited by the consumer thread before it hands on any record
        of these partitions (newly this member's: not those assigned straight back)."""
        self.on_revoked: Callable[[set[tuple[str, int]]], None] | None = None
        """Called (on a consumer thread) with partitions this member no longer owns."""
        self.on_delivery: Callable[[bool], None] | None = None
        """Called (on a consumer thread) with False when a rebalance stops delivery (its
        partitions revoked), True when the next assignment resumes it."""
        self.on_release: Callable[[], None] | None = None
        """Called (on the releasing thread) after holds were released: the embedded bus
        acknowledges up to the new oldest hold there, where the Kafka consumer commits after
        each poll instead."""

    # The processor's side: the record being handled.
    def begin(self, topic: str, partition: int, offset: int) -> None:
        with self._lock:
            epoch = self._epochs.get((topic, partition), 0)
        self._in_hand = Position(topic, partition, offset, epoch)

    def end(self) -> None:
        self._in_hand = None

    # The handler's side.
    def in_hand(self) -> Position:
        """Where the record being handled sits; `hold` it for each thing that keeps it."""
        if self._in_hand is None:
            raise RuntimeError("in_hand() outside a record's handler")
        return self._in_hand

    def hold(self, position: Position) -> None:
        partition = (position.topic, position.partition)
        with self._lock:
            if self._epochs.get(partition, 0) != position.epoch:
                return  # read before the partition moved: the replay holds it anew
            holds = self._holds.setdefault(partition, Counter())
            if holds[position.offset] == 0:
                heapq.heappush(self._heaps.setdefault(partition, []), position.offset)
            holds[position.offset] += 1

    def release(self, positions: Iterable[Position]) -> None:
        with self._lock:
            for position in positions:
                partition = (position.topic, position.partition)
                holds = self._holds.get(partition)
                stale = self._epochs.get(partition, 0) != position.epoch
                if stale or holds is None or holds[position.offset] == 0:
                    continue  # its partition moved meanwhile
                holds[position.offset] -= 1
                if holds[position.offset] == 0:
                    del holds[position.offset]
        if self.on_release is not None:
            self.on_release()

    def held(self) -> int:
        with self._lock:
            return sum(sum(holds.values()) for holds in self._holds.values())

    def owns(self, topic: str, partition: int) -> bool:
        with self._lock:
            return (topic, partition) in self.assigned

    def current(self, positions: Iterable[Position]) -> bool:
        """Whether no partition of these positions moved away since they were read (a session
        built from one that moved is the new owner's to publish).

        A partition being revoked still counts: in an eager rebalance most partitions come
        straight back with their fetch position kept, so nothing replays their records, and a
        session dropped meanwhile would be lost. If the partition does move, its new owner
        publishes the session again under the same revision (numbered from its observations),
        which downstream takes for a redelivery."""
        with self._lock:
            return all(self._epochs.get((p.topic, p.partition), 0) == p.epoch for p in positions)

    # The consumer's side.
    def committable(self, topic: str, partition: int, next_offset: int) -> int:
        """The offset to commit: `next_offset`, or the oldest offset still held below it."""
        key = (topic, partition)
        with self._lock:
            heap = self._heaps.get(key)
            holds = self._holds.get(key)
            while heap and (holds is None or holds[heap[0]] == 0):
                heapq.heappop(heap)
            return min(heap[0], next_offset) if heap else next_offset

    def assign(self, partitions: Iterable[tuple[str, int]]) -> None:
        """The new assignment. An eager rebalance revokes every partition first; those that
        come straight back keep their fetch position, so what was buffered from them stays."""
        new = set(partitions)
        with self._lock:
            self._gained |= new - self.assigned - self._revoking
            self.assigned |= new
            gone, self._revoking = self._revoking - new, set()
        self.lose(gone)
        if self.on_delivery is not None:
            self.on_delivery(True)

    def take_gained(self) -> set[tuple[str, int]]:
        """Partitions gained since the last call (the consumer restores them first)."""
        with self._lock:
            gained, self._gained = self._gained, set()
            return gained

    def revoke(self, partitions: Iterable[tuple[str, int]]) -> None:
        """A rebalance took these partitions; the next assignment says which ones moved away.
        Until then none of their records is taken."""
        with self._lock:
            self._revoking |= set(partitions)
            self.assigned -= self._revoking
        if self.on_delivery is not None:
            self.on_delivery(False)

    def lose(self, partitions: Iterable[tuple[str, int]]) -> None:
        """These partitions moved away (or were lost): their holds no longer count, and the
        handler drops what it buffered from them (the new owner replays it)."""
        gone = set(partitions)
        with self._lock:
            self.assigned -= gone
            self._gained -= gone
            for key in gone:
                self._holds.pop(key, None)
                self._heaps.pop(key, None)
                self._epochs[key] = self._epochs.get(key, 0) + 1
        if gone and self.on_revoked is not None:
            self.on_revoked(gone)
