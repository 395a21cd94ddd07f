"""A bounded least-recently-used map: the one shape of every cache and memory turnwatch keeps.

Everything turnwatch remembers is bounded (analysis results, verdicts, token owners, drift
baselines, seen revisions, trace mappings), and each forgets what it used least recently first.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class LRU(Generic[K, V]):
    """At most `capacity` entries; putting one more forgets the least recently used one.

    `get`, `touch` and `put` make an entry the most recently used; `peek`, `in` and iteration
    (least recently used first) do not. Values are never None: `get`, `peek` and `pop` answer None
    for an absent key. `on_evict(key, value)` hears of each entry forgotten to make room (not of
    `pop`), for owners that account for what entries hold; at capacity 0 every put is forgotten
    at once, and heard of.
    """

    __slots__ = ("_entries", "_on_evict", "capacity")

    def __init__(self, capacity: int, on_evict: Callable[[K, V], None] | None = None) -> None:
        if capacity < 0:
            raise ValueError(f"capacity must be at least 0, got {capacity}")
        self.capacity = capacity
        self._entries: OrderedDict[K, V] = OrderedDict()
        self._on_evict = on_evict

    def get(self, key: K) -> V | None:
        value = self._entries.get(key)
        if value is not None:
            self._entries.move_to_end(key)
        return value

    def peek(self, key: K) -> V | None:
        return self._entries.get(key)

    def touch(self, key: K) -> bool:
        """Make `key` the most recently used; False when it is not here."""
        if key in self._entries:
            self._entries.move_to_end(key)
            return True
        return False

    def put(self, key: K, value: V) -> None:
        entries = self._entries
        entries[key] = value
        entries.move_to_end(key)
        while len(entries) > self.capacity:
            evicted_key, evicted = entries.popitem(last=False)
            if self._on_evict is not None:
                self._on_evict(evicted_key, evicted)

    def pop(self, key: K) -> V | None:
        return self._entries.pop(key, None)

    def values(self) -> Iterator[V]:
        return iter(self._entries.values())

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def __iter__(self) -> Iterator[K]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)
