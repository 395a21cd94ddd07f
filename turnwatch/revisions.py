"""Revision identity: the clock session revisions are numbered by (`RevisionClock`), and seen
revisions, the guard that makes at-least-once delivery count each session revision once.

A redelivery (a rebalance, a restarted consumer replaying its last poll, the same incident read
again) comes soon after the first delivery, so remembering the most recent revisions is enough.
Entries are 8-byte digests of the identity, not the ids: the memory holds no session id, and
at 100 000 entries a collision (one revision wrongly taken as seen) has odds of about 1e-10.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable

from turnwatch.lru import LRU

REVISION_COUNTER_SPAN = 1024
"""Revisions per millisecond before the revision clock runs ahead of the wall clock."""


def _digest(topic: str, session_id: str, revision: int | str | None) -> bytes:
    # Topics contain no NUL and a revision is digits (a score record's may name its part, as
    # `3:judged`), so the joined text names one identity.
    return hashlib.blake2b(
        f"{topic}\x00{session_id}\x00{revision}".encode("utf-8", "surrogatepass"), digest_size=8
    ).digest()


class SeenRevisions:
    """A bounded set of (session_id, revision), optionally per topic; least recently seen go first.

    Use `first_time` when taking a revision is instantaneous; `seen` then `add` when it can fail
    in between, so a revision that failed is taken again on redelivery.
    """

    __slots__ = ("_digests",)

    def __init__(self, max_entries: int) -> None:
        self._digests: LRU[bytes, bool] = LRU(max_entries)

    def seen(self, session_id: str, revision: int | str | None, topic: str = "") -> bool:
        return self._digests.touch(_digest(topic, session_id, revision))

    def add(self, session_id: str, revision: int | str | None, topic: str = "") -> None:
        self._digests.put(_digest(topic, session_id, revision), True)

    def first_time(self, session_id: str, revision: int | str | None, topic: str = "") -> bool:
        """Whether this revision is new; it is remembered either way."""
        digest = _digest(topic, session_id, revision)
        if self._digests.touch(digest):
            return False
        self._digests.put(digest, True)
        return True

    def __len__(self) -> int:
        return len(self._digests)


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
