"""Helpers for dialects that flatten lists of messages into indexed attribute keys."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from turnwatch.collector.dialects.base import maybe_json, split_system
from turnwatch.collector.records import Message, Observation, ObservationKind, SpanView

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


def prefixed_size(attributes: dict[str, Any], prefixes: tuple[str, ...]) -> int:
    """Bytes of message content under the given prefixes, without parsing it."""
    return sum(
        len(value) if isinstance(value, str) else 16
        for key, value in attributes.items()
        if key.startswith(prefixes)
    )


def deferred_messages(
    parse: MessageParser,
    input_prefix: str,
    output_prefix: str,
    attributes: dict[str, Any],
    markers: frozenset[str],
) -> Callable[[Observation], None]:
    """The content of a flattened model call, parsed when its session is assembled."""

    def fill(call: Observation) -> None:
        reasons = call.incomplete_reasons
        inputs = parse(indexed(attributes, input_prefix), markers, reasons)
        call.outputs = parse(indexed(attributes, output_prefix), markers, reasons)
        call.inputs, call.system_instructions = split_system(inputs)

    return fill


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
    parsed when its session is assembled."""
    provider, model, input_tokens, output_tokens = usage
    attributes = span.attributes
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
        size_bytes=prefixed_size(attributes, prefixes),
        deferred_content=deferred_messages(
            parse, prefixes[0][:-1], prefixes[1][:-1], attributes, markers
        ),
    )
