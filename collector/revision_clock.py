"""Revision numbers for closed sessions, from the close time: nothing stored, never going back."""

from __future__ import annotations

import time
from collections.abc import Callable

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
