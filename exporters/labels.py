"""Bounded label values: every value a client or a plug-in controls passes through a limiter.

A chatbot names its own `service.name`, and judges and checks name themselves; taken verbatim
they would let one misbehaving client create unbounded series. A limiter admits values from an
allow-list, or else the first `max_values` distinct ones, and maps everything else to `other`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

OTHER = "other"
MAX_VALUE_CHARS = 64
_REASON_HEAD = re.compile(r"[a-z][a-z0-9_\- ]*")


class LabelLimiter:
    def __init__(
        self,
        name: str,
        max_values: int,
        allow: Iterable[str] = (),
        on_overflow: Callable[[str], None] | None = None,
    ) -> None:
        self.name = name
        self.max_values = max_values
        self._allow = frozenset(allow)
        self._admitted: set[str] = set()
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
        self._admitted.add(value)
        return value

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
