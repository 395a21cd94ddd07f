"""Bounded label values: every value a client or a plug-in controls passes through a limiter.

A chatbot names its own `service.name`, and judges and checks name themselves; taken verbatim
they would let one misbehaving client create unbounded series. A limiter admits values from an
allow-list, or else up to `max_values` distinct ones, and maps everything else to `other`.

Without an allow-list a value takes a free slot once it has been seen `admit_after` times
(`exporter.service_min_sessions` for services): taken first come, the first 20 names a client
made up (junk traffic sends each once) held the slots for good. Until then a value counts under
`other`. Values waiting for a slot are counted in a table of at most MAX_CANDIDATES, where a
value seen once is the first to make room: a flood of one-off names pushes out only its own kind,
while a real service's count keeps growing. A slot, once taken, is kept: its series stay on
/metrics, so handing it to another name would add series, not move them.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Callable, Iterable

OTHER = "other"
MAX_VALUE_CHARS = 64
MAX_CANDIDATES = 1_000
_REASON_HEAD = re.compile(r"[a-z][a-z0-9_\- ]*")


class Candidates:
    """How often values waiting for a slot were seen, for at most `capacity` values."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._counts: dict[str, int] = {}
        self._seen_once: OrderedDict[str, None] = OrderedDict()  # oldest first

    def add(self, value: str) -> int:
        """Count one sighting; returns the count so far."""
        count = self._counts.get(value, 0) + 1
        if count == 1:
            if len(self._counts) >= self.capacity:
                self._make_room()
            self._seen_once[value] = None
        elif count == 2:
            del self._seen_once[value]
        self._counts[value] = count
        return count

    def forget(self, value: str) -> None:
        if self._counts.pop(value, None) is not None:
            self._seen_once.pop(value, None)

    def __len__(self) -> int:
        return len(self._counts)

    def _make_room(self) -> None:
        if self._seen_once:
            victim, _ = self._seen_once.popitem(last=False)
        else:
            victim = min(self._counts, key=self._counts.__getitem__)
        del self._counts[victim]


class LabelLimiter:
    def __init__(
        self,
        name: str,
        max_values: int,
        allow: Iterable[str] = (),
        on_overflow: Callable[[str], None] | None = None,
        admit_after: int = 1,
    ) -> None:
        self.name = name
        self.max_values = max_values
        self.admit_after = admit_after
        self._allow = frozenset(allow)
        self._admitted: set[str] = set()
        self._candidates = Candidates(MAX_CANDIDATES)
        self._on_overflow = on_overflow

    def __call__(self, value: str | None) -> str:
        if not value:
            return "none"
        if self._allow:
            return value if value in self._allow else self._overflow()
        if value in self._admitted:
            return value
        if len(value) > MAX_VALUE_CHARS or len(self._admitted) >= self.max_values:
            return self._overflow()
        if self.admit_after > 1 and self._candidates.add(value) < self.admit_after:
            return self._overflow()
        self._candidates.forget(value)
        self._admitted.add(value)
        return value

    def admits(self, value: str) -> bool:
        """Whether `value` is a label value of its own now (counting nothing)."""
        return value in self._allow if self._allow else value in self._admitted

    def _overflow(self) -> str:
        if self._on_overflow is not None:
            self._on_overflow(self.name)
        return OTHER


def reason_code(reason: str | None) -> str:
    """A short code from a free-text unscored reason: its leading words, no values.

    Reasons are written as "no contract for service 'x'" or "check raised KeyError": the
    leading words name the cause, what follows a quote, digit or colon names an instance.
    """
    if not reason:
        return "unspecified"
    match = _REASON_HEAD.match(reason.strip().lower())
    if match is None:
        return "unspecified"
    words = match.group(0).replace("-", " ").split()
    return "_".join(words)[:MAX_VALUE_CHARS] or "unspecified"
