"""Helpers for dialects that flatten lists of messages into indexed attribute keys."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from turnwatch.collector.dialects.base import (
    CONTENT_OVERHEAD,
    OBSERVATION_OVERHEAD,
    held_size,
    maybe_json,
    split_system,
)
from turnwatch.collector.records import (
    DeferredContent,
    Message,
    Observation,
    ObservationKind,
    SpanView,
)

MessageParser = Callable[[list[dict[str, Any]], frozenset[str], list[str]], list[Message]]


def indexed(attributes: dict[str, Any], prefix: str) -> list[dict[str, Any]]:
    """Group `prefix.{i}.rest` keys into one dict per index, ordered by index.

    `{"a.0.x": 1, "a.1.x": 2, "a.0.y": 3}` with prefix "a" gives `[{"x": 1, "y": 3}, {"x": 2}]`.
    """
    head = prefix + "."
    groups: dict[int, dict[str, Any]] = {}
    for key, value in attributes.items():
        if not key.startswith(head):
            continue
        index_text, _, rest = key[len(head) :].partition(".")
        if not (index_text.isascii() and index_text.isdecimal()) or not rest:
            continue
        groups.setdefault(int(index_text), {})[rest] = value
    return [groups[index] for index in sorted(groups)]


def has_prefix(attributes: dict[str, Any], *prefixes: str) -> bool:
    return any(key.startswith(prefixes) for key in attributes)


class FlattenedContent(DeferredContent):
    """A flattened model call's message attributes (only those), parsed at assembly.

    Resent history: a call whose input attributes include every input attribute of the previous
    call, unchanged, and adds only messages at higher indexes keeps just those; the whole input
    parses to the previous call's messages followed by theirs.
    """

    def __init__(
        self,
        channel: str,
        parse: MessageParser,
        markers: frozenset[str],
        input_prefix: str,
        output_prefix: str,
        inputs: dict[str, Any],
        outputs: dict[str, Any],
    ) -> None:
        self.channel = channel
        self.parse = parse
        self.markers = markers
        self.input_prefix = input_prefix
        self.output_prefix = output_prefix
        self.inputs = inputs
        self.outputs = outputs
        self.previous: FlattenedContent | None = None
        self.count = -1  # memo: 1 + the highest message index of the whole input
        # The input is measured in drop_known: a call that extends the previous one adds only
        # the size of what it adds, instead of walking every message attribute again.
        self.history_bytes = -1
        self.held_bytes = CONTENT_OVERHEAD + held_size(outputs)

    def history(self) -> object:
        return self.inputs

    def message_count(self) -> int:
        if self.count < 0:
            self.count = (
                max([_index(key, self.input_prefix) for key in self.inputs], default=-1) + 1
            )
        return self.count

    def drop_known(self, previous: DeferredContent | None, history: object) -> bool:
        rest = self._rest(previous, history)
        if rest is None or not isinstance(previous, FlattenedContent):
            self.history_bytes = held_size(self.inputs)
            self.held_bytes += self.history_bytes
            return False
        rest_bytes = held_size(rest)
        whole = previous.history_bytes
        if whole < 0 or not isinstance(history, dict):
            self.history_bytes = held_size(self.inputs)
        else:  # the previous whole input, with the new attributes in a larger dict
            self.history_bytes = (
                whole + rest_bytes + sys.getsizeof(self.inputs) - sys.getsizeof(history)
            )
        self.held_bytes += rest_bytes
        self.inputs, self.previous = rest, previous
        return True

    def _rest(self, previous: DeferredContent | None, history: object) -> dict[str, Any] | None:
        """The input attributes of messages after the previous call's, or None when this input
        does not extend the previous one."""
        if not isinstance(previous, FlattenedContent) or not isinstance(history, dict):
            return None
        new = self.inputs
        if len(new) < len(history) or not history.items() <= new.items():
            return None
        known = previous.message_count()
        count = known
        rest: dict[str, Any] = {}
        for key in new.keys() - history.keys():
            index = _index(key, self.input_prefix)
            if index < known:
                # An attribute added to a message the previous call already sent, or one that
                # names no message: not an extension.
                return None
            rest[key] = new[key]
            count = max(count, index + 1)
        if not rest:  # the same input again (a retry): nothing to extend
            return None
        self.count = count
        return rest

    def fill(self, call: Observation) -> bool:
        reasons = call.incomplete_reasons
        inputs = self.parse(indexed(self.inputs, self.input_prefix), self.markers, reasons)
        call.outputs = self.parse(indexed(self.outputs, self.output_prefix), self.markers, reasons)
        call.inputs, call.system_instructions = split_system(inputs)
        return self.previous is not None


def _index(key: str, prefix: str) -> int:
    """The message index of `prefix.{i}.rest`, or -1."""
    index_text, _, rest = key[len(prefix) + 1 :].partition(".")
    if index_text.isascii() and index_text.isdecimal() and rest:
        return int(index_text)
    return -1


def flattened_content(
    channel: str,
    parse: MessageParser,
    input_prefix: str,
    output_prefix: str,
    attributes: dict[str, Any],
    markers: frozenset[str],
) -> FlattenedContent:
    """The message attributes of a flattened model call, split from the rest of the span."""
    input_head, output_head = input_prefix + ".", output_prefix + "."
    inputs: dict[str, Any] = {}
    outputs: dict[str, Any] = {}
    for key, value in attributes.items():
        if key.startswith(input_head):
            inputs[key] = value
        elif key.startswith(output_head):
            outputs[key] = value
    return FlattenedContent(channel, parse, markers, input_prefix, output_prefix, inputs, outputs)


def tool_result(call_id: Any, text: str | None, redacted: bool, name: Any = None) -> Message:
    """A flattened `tool` role message: the result of the call `call_id`."""
    return Message(
        role="tool",
        tool_call_id=str(call_id) if call_id else None,
        tool_response=maybe_json(text),
        name=name,
        redacted=redacted,
    )


def flattened_call(
    span: SpanView,
    dialect: str,
    parse: MessageParser,
    prefixes: tuple[str, str],
    markers: frozenset[str],
    usage: tuple[str | None, str | None, int | None, int | None],
) -> Observation:
    """A model call whose messages are flattened under the (input, output) `prefixes` (each
    ending in "."); `usage` is (provider, model, input tokens, output tokens). Its content is
    parsed when its session is assembled, and resent history is dropped from it on the
    dialect's channel."""
    provider, model, input_tokens, output_tokens = usage
    content = flattened_content(
        dialect, parse, prefixes[0][:-1], prefixes[1][:-1], span.attributes, markers
    )
    return Observation(
        kind=ObservationKind.LLM_CALL,
        dialect=dialect,
        trace_id=span.trace_id,
        span_id=span.span_id,
        start_ns=span.start_ns,
        end_ns=span.end_ns,
        provider=provider,
        model=model,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        incomplete_reasons=["dropped_attributes"] if span.dropped_attributes else [],
        size_bytes=OBSERVATION_OVERHEAD + content.held_bytes,
        content=content,
    )
