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
from turnwatch.collector.message_runs import InputItems, listed
from turnwatch.collector.otlp_common import DecodeLimits
from turnwatch.collector.otlp_values import raw_attributes
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


def has_messages(span: SpanView, *prefixes: str) -> bool:
    """Whether the span carries message attributes under any of `prefixes` (each ending in ".")."""
    held = span.message_attributes
    return any([prefix in held for prefix in prefixes]) or any(
        [key.startswith(prefixes) for key in span.attributes]
    )


# An attribute as the content holds it: its KeyValue encoding (bytes, from the protobuf
# receiver, decoded at assembly) or a (key, value) pair (already decoded, e.g. OTLP/JSON).
# `Any`: mypyc erases the union of those anyway.
Item = Any
_DECODE_LIMITS = DecodeLimits(max_attribute_bytes=1 << 62, max_values=1 << 62, values_left=1 << 62)
"""Encodings were checked against the request's limits when they arrived."""


def _decoded(items: list[Item]) -> dict[str, Any]:
    raws = [item for item in items if isinstance(item, bytes)]
    decoded = raw_attributes(raws, _DECODE_LIMITS) if raws else {}
    for item in items:
        if isinstance(item, tuple):
            decoded[item[0]] = item[1]
    return decoded


def _key(item: Item) -> str:
    """An item's key: an encoding held here starts with its key (otlp_values._keep_message)."""
    if isinstance(item, tuple):
        return str(item[0])
    return item[2 : item[1] + 2].decode()


class FlattenedContent(DeferredContent):
    """A flattened model call's message attributes (only those), decoded and parsed at assembly.

    Resent history: a call whose input attributes start with every input attribute of the
    previous call, in the same order and encoded the same, and go on only with messages at
    higher indexes keeps just those; the whole input parses to the previous call's messages
    followed by theirs. The channel keeps the whole input as a chain (`message_runs.InputItems`):
    the previous whole input, then this call's part. When the receiver recognised the previous
    call's input in this span's bytes (`resent`, the very chain the channel keeps), that is one
    identity check; otherwise the encodings are compared, in order (one C comparison of lists).
    Nothing per call copies or walks the history when it is recognised.
    """

    def __init__(
        self,
        channel: str,
        parse: MessageParser,
        markers: frozenset[str],
        input_prefix: str,
        output_prefix: str,
        inputs: list[Item],
        outputs: list[Item],
        run: Any = None,
        resent: Any = None,
    ) -> None:
        self.channel = channel
        self.parse = parse
        self.markers = markers
        self.input_prefix = input_prefix
        self.output_prefix = output_prefix
        # The input's encodings after those of `resent` (the whole input when it is None).
        self.inputs = inputs
        self.resent = resent
        self.outputs = outputs
        self.whole: object = inputs  # the whole input, until the channel's tail takes it
        self.previous: FlattenedContent | None = None
        self.count = -1  # memo: 1 + the highest message index of the whole input
        # The run the receiver recognises in the next call's bytes lives while this call is the
        # channel's last (message_runs.py); counted apart, as it is released then.
        self.run = run
        self.tail_bytes = run.held_bytes() if run is not None else 0
        # The input is measured in drop_known: a call that extends the previous one adds only
        # the size of what it adds, instead of walking every message attribute again.
        self.held_bytes = CONTENT_OVERHEAD + held_size(outputs)

    def history(self) -> object:
        return self.whole

    def kept_history(self, history: object) -> object:
        whole, self.whole = self.whole, []
        return whole

    def whole_inputs(self) -> list[Item]:
        """The input's encodings before drop_known kept only its new part (a routing collector
        seals a call whole)."""
        if self.resent is not None:
            self.inputs, self.resent = self.resent.flat() + self.inputs, None
        return self.inputs

    def message_count(self) -> int:
        if self.count < 0:
            self.count = (
                max(
                    [_index(_key(item), self.input_prefix) for item in self.whole_inputs()],
                    default=-1,
                )
                + 1
            )
        return self.count

    def drop_known(self, previous: DeferredContent | None, history: object) -> bool:
        rest = self._rest(previous, history) if isinstance(previous, FlattenedContent) else None
        if rest is None or not isinstance(previous, FlattenedContent):
            inputs = self.whole_inputs()
            self.whole = self._chained(None, inputs)
            self.held_bytes += held_size(inputs) + sys.getsizeof(self.whole)
            return False
        if isinstance(history, InputItems):
            before = history
        else:  # a list, kept from here on by the chain
            before = InputItems(None, history if isinstance(history, list) else [])
            self.held_bytes += sys.getsizeof(history) + sys.getsizeof(before)
        self.whole = self._chained(before, rest)
        self.held_bytes += held_size(rest) + sys.getsizeof(self.whole)
        self.inputs, self.resent, self.previous = rest, None, previous
        return True

    def _chained(self, before: InputItems | None, rest: list[Item]) -> InputItems:
        """The whole input: `rest` after `before`. The receiver's run for the next call shares
        it: when the run holds the same encodings, it is the run's own chain (built when the span
        was decoded), so the next span recognised by that run names this very chain."""
        run = self.run
        if run is None or run.head != b"".join((self.input_prefix.encode(), b".")):
            return InputItems(before, rest)
        items = run.items
        if items.before is before and items.count == len(rest) + (before.count if before else 0):
            return items
        whole = InputItems(before, rest)
        if whole.count == items.count:
            run.items = whole  # the same encodings, so what this input repeats is not kept twice
        return whole

    def _rest(self, previous: FlattenedContent, history: object) -> list[Item] | None:
        """The input attributes of messages after the previous call's, or None when this input
        does not extend the previous one."""
        if self.resent is not None and self.resent is history:
            rest = self.inputs  # the span began with the previous whole input, byte for byte
        else:
            known_list = listed(history)
            new = self.whole_inputs()
            if known_list is None:
                return None
            known_items = len(known_list)
            if len(new) <= known_items or new[:known_items] != known_list:
                return None
            rest = new[known_items:]
        if not rest:
            return None
        known = previous.message_count()
        count = known
        for item in rest:
            index = _index(_key(item), self.input_prefix)
            if index < known:
                # An attribute added to a message the previous call already sent, or one that
                # names no message: not an extension.
                return None
            count = max(count, index + 1)
        self.count = count
        return rest

    def fill(self, call: Observation) -> bool:
        reasons = call.incomplete_reasons
        inputs = self.parse(
            indexed(
                _decoded(self.inputs if self.previous else self.whole_inputs()), self.input_prefix
            ),
            self.markers,
            reasons,
        )
        call.outputs = self.parse(
            indexed(_decoded(self.outputs), self.output_prefix), self.markers, reasons
        )
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
    span: SpanView,
    markers: frozenset[str],
) -> FlattenedContent:
    """The message attributes of a flattened model call, split from the rest of the span."""
    input_head, output_head = input_prefix + ".", output_prefix + "."
    held = span.message_attributes
    # The span's own lists (nobody changes them once decoded), copied only to add decoded ones.
    inputs: list[Item] = held.get(input_head, [])
    outputs: list[Item] = held.get(output_head, [])
    decoded_inputs: list[Item] = []
    decoded_outputs: list[Item] = []
    for key, value in span.attributes.items():
        if key.startswith(input_head):
            decoded_inputs.append((key, value))
        elif key.startswith(output_head):
            decoded_outputs.append((key, value))
    if decoded_inputs:
        inputs = inputs + decoded_inputs
    if decoded_outputs:
        outputs = outputs + decoded_outputs
    known = span.resent_run
    resent = known.items if known is not None and known.head == input_head.encode() else None
    return FlattenedContent(
        channel,
        parse,
        markers,
        input_prefix,
        output_prefix,
        inputs,
        outputs,
        span.message_run,
        resent,
    )


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
    content = flattened_content(dialect, parse, prefixes[0][:-1], prefixes[1][:-1], span, markers)
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
