"""Idempotent processing: remember recent record identities, drop redeliveries."""

from __future__ import annotations

from collections import OrderedDict


class Deduper:
    """Bounded LRU of (topic, key, revision). Redeliveries come soon after the first delivery
    (a rebalance or a restarted consumer replays at most a poll batch), so recent is enough."""

    def __init__(self, max_entries: int) -> None:
        self.max_entries = max_entries
        self._seen: OrderedDict[tuple[str, str, int | None], None] = OrderedDict()

    def seen(self, identity: tuple[str, str, int | None]) -> bool:
        if identity in self._seen:
            self._seen.move_to_end(identity)
            return True
        return False

    def add(self, identity: tuple[str, str, int | None]) -> None:
        self._seen[identity] = None
        self._seen.move_to_end(identity)
        while len(self._seen) > self.max_entries:
            self._seen.popitem(last=False)

    def __len__(self) -> int:
        return len(self._seen)
