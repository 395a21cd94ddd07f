"""Revision numbers for closed sessions, from a time: nothing stored, never going back.

One process numbers a session from its close time. In the distributed layout every routing
collector stamps each observation as it arrives, and a sessionizer member numbers a session from
its latest stamp, so every member that builds it gives it the same number (`from_arrivals`).
A sessionizer's numbering (`SessionRevisions`) also remembers the last revision it gave each
conversation, bounded, so a conversation that continues is numbered above it; and what the
partition's previous owner handed over (`HandedOver`, from the changelog)."""

from __future__ import annotations

import time
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from turnwatch.lru import LRU

REVISION_COUNTER_SPAN = 1024
"""Revisions per millisecond before the revision clock runs ahead of the wall clock."""


class RevisionClock:
    """Revision numbers that only grow, within a process and across restarts, with nothing
    stored: the close time in milliseconds since the epoch times 1024, plus one for each further
    close in the same millisecond (a hybrid logical clock). A conversation that returns after
    its memory was dropped (`max_remembered_sessions`, the reopen window, a restart) gets a
    number above every earlier one, so downstream deduplication by (session id, revision) never
    takes it for a redelivery. Values stay below 2**53 (exact as a JSON double) until 2248.

    It relies on the wall clock not stepping back past the last close across a restart (with
    the write-ahead log on, replay moves it past every revision the log's done marks name);
    within a process it never goes back whatever the clock does.
    """

    def __init__(self, wall_clock: Callable[[], float] = time.time) -> None:
        self.wall_clock = wall_clock
        self.last = 0

    def next(self) -> int:
        self.last = max(int(self.wall_clock() * 1000) * REVISION_COUNTER_SPAN, self.last + 1)
        return self.last


def from_arrivals(latest_arrival: int, previous_revision: int) -> int:
    """A sessionizer member's revision number for a session: its observations' latest arrival
    stamp (router.py), or one above the conversation's last revision this member gave.

    Why not the member's close time: offsets are committed only below a partition's oldest
    unpublished session, so a member that takes a partition over replays sessions the previous
    owner already published. From the observations, the copy gets the same number again (it
    ends with the same observation), and downstream takes it for the redelivery it is; from a
    close time it would be new, and counted twice. A continuing conversation still gets a
    higher number: its new observations arrive an idle timeout after the last one, so their
    stamps are higher while the collectors' clocks agree within the idle timeout; and while a
    member remembers the conversation, above its last revision whatever the clocks say.
    """
    return max(latest_arrival, previous_revision + 1)


def arrival_identity(arrival: int, trace_id: str, time_ns: int) -> int:
    """One observation, as every member computes it (no per-process string hash): what a replay
    or a forward brings again is recognised by it, in a session and through the changelog."""
    return hash((arrival, zlib.crc32(trace_id.encode()), time_ns))


@dataclass(frozen=True, slots=True)
class HandedOver:
    """A conversation's last revision as the partition's previous owner published it, from
    the changelog (`turnwatch.collector.changelog`): its number, its observations' latest
    arrival stamp, and per partition of `turnwatch.observations` the highest offset of an
    observation in it."""

    revision: int
    last_arrival: int
    offsets: dict[int, int]
    joined_by_trace: frozenset[int] = frozenset()
    """Arrival identities (`arrival_identity`) of the revision's observations that
    joined through their trace: a trace's next owner may forward those again."""

    def number(self, latest_arrival: int, held: Iterable[Any]) -> int:
        """A session of this conversation built by the member that took the partition over.
        One holding an observation past the revision's offsets continues the conversation: the
        next number, whatever the stamps say (a collector whose clock is behind stamps lower).
        One within them is a replayed copy of a revision already published: the same number
        when it reaches the revision's latest stamp, else the earlier revision's own, from its
        observations as before."""
        if self.continued_by(held):
            return from_arrivals(latest_arrival, self.revision)
        return self.revision if latest_arrival >= self.last_arrival else latest_arrival

    def continued_by(self, held: Iterable[Any]) -> bool:
        """Whether observations at these bus positions include one past the revision's."""
        return any(p.offset > self.offsets.get(p.partition, -1) for p in held)

    def forwarded_again(self, identity: int, held: Any) -> bool:
        """Whether the observation at bus position `held` is one of the revision's that a
        trace's next owner forwarded again: one that joined through its trace, at a new
        position. At its own position it is replayed, and a replayed copy is rebuilt whole."""
        return (
            identity in self.joined_by_trace
            and held is not None
            and held.offset > self.offsets.get(held.partition, -1)
        )


class SessionRevisions:
    """A sessionizer's revision numbering: its clock, and the last revision it gave each
    conversation it remembers (up to `max_remembered_sessions`, least recently closed
    forgotten first). A key remembered here closed before: a span arriving for it after its
    content is dropped is flagged truncated, and its next revision is numbered above the last."""

    def __init__(self, remembered: int, wall_clock: Callable[[], float] = time.time) -> None:
        self.clock = RevisionClock(wall_clock)
        self._last: LRU[str, int] = LRU(remembered)
        # Restored from the changelog, under the same bound: used once, by the next close.
        self._handed: LRU[str, HandedOver] = LRU(remembered)

    def number(self, key: str, latest_arrival: int, held: Iterable[Any] = ()) -> int:
        """The revision of `key`'s session closing now: from its observations' latest arrival
        stamp in the sessionizer role (`from_arrivals`; `held` are their bus positions), else
        from the close time. A revision handed over above the last one this member gave
        decides instead (`HandedOver.number`)."""
        previous = self._last.get(key) or 0
        handed = self.handed_over(key)
        if not latest_arrival:
            revision = self.clock.next()
        elif handed is not None:
            revision = handed.number(latest_arrival, held)
            if revision >= handed.revision:  # not a copy of an earlier one: used up
                self._handed.pop(key)
        else:
            revision = from_arrivals(latest_arrival, previous)
        self._last.put(key, revision)
        return revision

    def continues_handed_over(self, key: str, held: Iterable[Any]) -> bool:
        """Whether `key`'s session closing now continues a revision another member published
        (see `number`): that revision's content is not here, so the session is flagged
        truncated, as one continuing a conversation this member remembers without its content
        is. Conservative: a replay that happens to bring every earlier observation again (its
        commit stayed below all of them) is flagged too, since the offsets handed over do not
        say where the conversation began."""
        handed = self.handed_over(key)
        return handed is not None and handed.continued_by(held)

    def handed_over(self, key: str) -> HandedOver | None:
        """The revision handed over for `key`, while it decides `key`'s next number."""
        handed = self._handed.peek(key)
        if handed is None or handed.revision <= (self._last.get(key) or 0):
            return None
        return handed

    def hand_over(self, key: str, handed: HandedOver) -> None:
        """What the changelog says the partition's previous owner published last for `key`."""
        known = self._handed.peek(key)
        if known is None or handed.revision >= known.revision:
            self._handed.put(key, handed)

    def published(
        self, key: str, arrival: int, identity: int, held: Any, window_seconds: float
    ) -> bool:
        """Whether an observation of `key` (at bus position `held`), whose session content is
        not here, is one of its published revisions brought again: one of the revision handed
        over, forwarded again (`HandedOver.forwarded_again`), or one stamped at or below the
        last revision and taken by a collector more than the reopen window ago (by this
        clock). A replay brings such observations when a partition's commit stayed that long
        below them (a conversation open for hours holds it) and the partition moves; within the
        window the kept session's arrival identities recognise them. A never-seen observation
        that old would have waited on the bus for longer than the reopen window, so it is taken
        for a redelivery too (counted in `turnwatch_observations_redelivered_total`)."""
        handed = self.handed_over(key)
        if handed is not None and handed.forwarded_again(identity, held):
            return True
        last = self._last.get(key)
        age_ms = self.clock.wall_clock() * 1000 - arrival / REVISION_COUNTER_SPAN
        return last is not None and arrival <= last and age_ms > window_seconds * 1000

    def __contains__(self, key: str) -> bool:
        return key in self._last

    def __len__(self) -> int:
        return len(self._last)
