"""Resent history: stateless chat APIs resend the whole conversation with every model call, so a
session keeps, per channel, the last call and its whole input (`HistoryTail`) and each new call
keeps only what it adds (the sessionizer's part of content handling)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from turnwatch.collector.records import Observation

# Memory of one tail's own record, measured with tracemalloc (see the sessionizer's overheads).
TAIL_OVERHEAD = 100


@dataclass(slots=True)
class HistoryTail:
    """The last model call of a channel and its whole input, for the next call to extend."""

    observation: Observation
    history: Any  # a str, list or dict: `object` breaks mypyc's dataclass annotations
    extra_bytes: int
    """What the whole input holds beyond the observation (which may keep only its new part),
    and what the observation's content holds only while it is the channel's last."""


def drop_resent_history(tails: dict[str, HistoryTail], observation: Observation) -> int:
    """Keep only what a model call adds to the input of the channel's previous call (the
    whole history that stateless chat APIs resend); return the bytes the tail changed by."""
    content = observation.content
    if content is None:
        return 0
    history = content.history()
    if history is None:
        return 0
    tail = tails.get(content.channel)
    held_before = content.held_bytes
    previous = tail.observation.content if tail is not None else None
    if content.drop_known(previous, tail.history if tail is not None else None):
        observation.resends = tail.observation if tail is not None else None
    history = content.kept_history(history)
    observation.size_bytes += content.held_bytes - held_before
    # A trimmed observation no longer holds its whole input: the tail does, until the next.
    extra = (content.history_bytes if observation.resends is not None else 0) + content.tail_bytes
    if tail is None:
        tails[content.channel] = HistoryTail(observation, history, extra)
        return TAIL_OVERHEAD + extra
    change = extra - tail.extra_bytes
    tail.observation, tail.history, tail.extra_bytes = observation, history, extra
    return change
