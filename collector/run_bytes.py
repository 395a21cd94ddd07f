"""Where a span's input messages sit in its encoding, and the comparison of a run's bytes: the
per-span half of recognising resent history (message_runs.py), compiled with mypyc.

message_runs.py keeps the runs themselves and the cache that holds them weakly (its classes need
weak references, which mypyc's classes do not support); what runs for every large span, walking
its fields, hashing where its runs start and comparing their chunks, is here.
"""

from __future__ import annotations

from typing import Any

from turnwatch.collector.otlp_wire import first_attribute, length_at

TEXT_KEY = "gen_ai.input.messages"
TEXT_HEAD = TEXT_KEY.encode()
"""GenAI's input messages: one JSON string, which a resent call extends (its closing bracket
replaced by a comma and the messages that follow)."""
INPUT_HEADS = (b"llm.input_messages.", b"gen_ai.prompt.", TEXT_HEAD)
"""Key prefixes of the input messages (the flattened dialects' attributes, GenAI's one
attribute): what resent history repeats."""
EMPTY_TEXT_FIELD = b"\x4a\x1b\x0a\x15" + TEXT_HEAD + b"\x12\x02\x0a\x00"
"""Span.attributes holding `gen_ai.input.messages` as the empty string: what a span whose text
begins with a known run is parsed with in its place, so its attributes keep their order."""
SPAN_ATTRIBUTES = 9
KEY_BYTES = 256
"""Bytes hashed to find the runs a span's input may begin with."""


def text_value(body: bytes, position: int, end: int) -> tuple[int, int, int]:
    """(start, end) of the text of the `gen_ai.input.messages` attribute field at `position`, and
    the field's end, when it is a plain string KeyValue; (-1, -1, -1) when it is anything else."""
    value_start, field_end = length_at(body, position + 1, end)
    key_end = value_start + 2 + len(TEXT_HEAD)
    if (
        key_end >= field_end
        or body[value_start] != 0x0A  # KeyValue.key
        or body[value_start + 1] != len(TEXT_HEAD)
        or body[key_end] != 0x12  # KeyValue.value, an AnyValue
    ):
        return -1, -1, -1
    any_start, any_end = length_at(body, key_end + 1, field_end)
    if any_end != field_end or any_start >= any_end or body[any_start] != 0x0A:  # string_value
        return -1, -1, -1
    text_start, text_end = length_at(body, any_start + 1, any_end)
    if text_end != any_end:
        return -1, -1, -1
    return text_start, text_end, field_end


def locate(body: bytes, start: int, end: int) -> tuple[int, bytes]:
    """(position, head) of the span at [start, end)'s first input message attribute, or
    (-1, b"") when it has none."""
    position = first_attribute(body, start, end, SPAN_ATTRIBUTES, INPUT_HEADS)
    if position < 0 or body[position] != 0x4A:  # a tag in more bytes than it needs
        return -1, b""
    key_start = length_at(body, position + 1, end)[0] + 2  # the KeyValue's 0x0A, key length
    for head in INPUT_HEADS:
        if body.startswith(head, key_start):
            return position, head
    return -1, b""


def region(body: bytes, position: int, end: int, head: bytes) -> tuple[int, int, int]:
    """(start, end) of where a run is compared for the input found at `position` (the
    attributes from there to the span's `end`, or GenAI's text), and the end of what a known
    run's bytes replace; (-1, -1, -1) when there is nothing to compare."""
    if position < 0:
        return -1, -1, -1
    if head == TEXT_HEAD:
        return text_value(body, position, end)
    return position, end, end


def _opening_end(body: bytes, position: int, end: int, head: bytes) -> int:
    """Where the attributes of the run's first message end (the start of its second's), or -1."""
    first = b""
    while position < end and body[position] == 0x4A:  # Span.attributes (field 9, length-delimited)
        start, stop = length_at(body, position + 1, end)
        index_start = start + 2 + len(head)
        index_end = body.find(b".", index_start, stop)
        if index_end < 0:
            return -1
        index = body[index_start:index_end]
        if first and index != first:
            return position
        first = index
        position = stop
    return -1


def run_key(body: bytes, position: int, end: int, head: bytes, limit: int) -> tuple[int, int, int]:
    """(limit, hash, reach): how runs at `position` are found, and how far from it the bytes
    hashed reach (a run shorter than that is not remembered); hash 0 when there are none.
    What is hashed starts after the first message (a system prompt every conversation of a
    service shares comes first; what follows it tells them apart)."""
    if head == TEXT_HEAD:
        opening = body.find(b"},", position, end)
        opening = opening + 2 if opening >= 0 else -1
    else:
        opening = _opening_end(body, position, end, head)
    if opening < 0 or opening + KEY_BYTES > end:
        return (limit, 0, 0)
    return (limit, hash(body[opening : opening + KEY_BYTES]), opening + KEY_BYTES - position)


def chunks_start(chunks: tuple[bytes, ...], body: bytes, position: int, end: int) -> bool:
    """Whether the bytes at `position` (within `end`) begin with `chunks`, one after another."""
    for chunk in chunks:
        size = len(chunk)
        if position + size > end or not body.startswith(chunk, position):
            return False
        position += size
    return True


def longest_start(runs: list[Any], body: bytes, position: int, end: int) -> Any:
    """The longest of `runs` (message_runs.MessageRun) that the bytes at `position` begin with,
    within `end`; None if none does. The sizes are compared first: a run longer than the bytes
    there is not read."""
    best: Any = None
    best_size = -1
    for run in runs:
        size: int = run.size
        if best_size < size <= end - position and chunks_start(run.chunks, body, position, end):
            best, best_size = run, size
    return best


def extended_chunks(chunks: tuple[bytes, ...], added: bytes) -> tuple[bytes, ...]:
    """`chunks` followed by `added`, merged so that each chunk is at least twice as long as the
    next: a run that extends another shares all but its last chunks."""
    merged = list(chunks)
    merged.append(added)
    while len(merged) > 1 and len(merged[-2]) < 2 * len(merged[-1]):
        last = merged.pop()
        merged[-1] = merged[-1] + last
    return tuple(merged)
