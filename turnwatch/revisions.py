"""Seen revisions: the guard that makes at-least-once delivery count each session revision once.

A redelivery (a rebalance, a restarted consumer replaying its last poll, the same incident read
again) comes soon after the first delivery, so remembering the most recent revisions is enough.
Entries are 8-byte digests of the identity, not the ids: the memory holds no session id, and
at 100 000 entries a collision (one revision wrongly taken as seen) has odds of about 1e-10.
"""

from __future__ import annotations

import hashlib

from turnwatch.lru import LRU


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
