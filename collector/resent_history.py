"""Resent history: stateless chat APIs resend the whole conversation with every model call, so a
session keeps, per channel, the last call and its whole input (`HistoryTail`) and each new call
keeps only what it adds (the sessionizer's part of content handling).

In one process the dialects' contents compare raw attribute values (and the protobuf receiver
hands a flattened call the very encodings the previous call holds). A sessionizer member of the
distributed layout gets each call off `turnwatch.observations` already parsed, its whole input
sealed by a routing collector, so nothing is shared with the previous call: `ParsedContent`
recognises the extension by equality of the parsed messages instead.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

from turnwatch.collector.dialects.base import (
    CONTENT_OVERHEAD,
    OBSERVATION_OVERHEAD,
    held_size,
    messages_size,
)
from turnwatch.collector.records import DeferredContent, Message, Observation

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
    if previous is not None:
        previous.release_tail()
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


class ParsedContent(DeferredContent):
    """A model call's input as a sessionizer member reads it from the bus: parsed messages.

    A call whose input starts with every message of the previous call's input (equal in every
    field, so the whole input is exactly the previous one followed by the rest) and goes on
    keeps only the rest; anything else (an edited or cut history, calls out of order, a retry)
    keeps the whole input, and the assembler aligns it as before. The channel's tail keeps the
    whole input as the previous whole input followed by this call's part: the copies the bus
    brought of messages the session already holds are let go.
    """

    def __init__(self, channel: str, inputs: list[Message]) -> None:
        self.channel = channel
        self.inputs = inputs
        self.whole = inputs  # the whole input, until the channel's tail takes it
        self.extends = False
        # The input is measured in drop_known, once it is known what of it is kept.
        self.held_bytes = CONTENT_OVERHEAD

    def history(self) -> object:
        return self.whole

    def kept_history(self, history: object) -> object:
        whole, self.whole = self.whole, []
        return whole

    def drop_known(self, previous: DeferredContent | None, history: object) -> bool:
        new = self.inputs
        if (
            not isinstance(previous, ParsedContent)
            or not isinstance(history, list)
            or len(new) <= len(history)
            or new[: len(history)] != history
        ):
            self.held_bytes += messages_size(new)
            return False
        rest = new[len(history) :]
        self.whole = history + rest
        self.history_bytes = sys.getsizeof(self.whole)
        self.held_bytes += messages_size(rest)
        self.inputs, self.extends = rest, True
        return True

    def fill(self, call: Observation) -> bool:
        call.inputs = list(self.inputs)  # the assembler extends working copies' lists
        return self.extends


def defer_parsed_inputs(observation: Observation, channel: str) -> None:
    """Give a model call read from the bus its input as content of `channel`, for the
    sessionizer to compare, and measure what it holds here (the size the routing collector
    measured is of the content as it arrived there, before parsing)."""
    content = ParsedContent(channel, observation.inputs)
    observation.inputs = []
    observation.content = content
    observation.size_bytes = (
        OBSERVATION_OVERHEAD
        + content.held_bytes
        + messages_size(observation.outputs)
        + held_size(observation.system_instructions)
    )
