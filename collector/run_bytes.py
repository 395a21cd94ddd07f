"""Where a span's input messages sit in its encoding, and the comparison of a run's bytes: the
per-span half of recognising resent history (message_runs.py), compiled with mypyc.

message_runs.py keeps the runs' classes (they need weak references, which mypyc's classes do not
support); what runs for every large span, walking its fields, hashing where its runs start,
finding and remembering runs in the cache that holds them weakly (`KNOWN_RUNS`), comparing their
chunks and making the span's run for the next call (`next_run`), is here.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

from turnwatch.collector.message_runs import RUN_GROWTH, InputItems, MessageRun, TextPieces
from turnwatch.collector.otlp_common import ItemRejected, Undecodable
from turnwatch.collector.otlp_values import UNDECODABLE, plain_messages
from turnwatch.collector.otlp_wire import first_attribute, length_at
from turnwatch.collector.records import SpanView

TEXT_KEY = "gen_ai.input.messages"
TEXT_HEAD = TEXT_KEY.encode()
"""GenAI's input messages: one JSON string, which a resent call extends (its closing bracket
replaced by a comma and the messages that follow)."""
INPUT_HEADS = (b"llm.input_messages.", b"gen_ai.prompt.", TEXT_HEAD)
"""Key prefixes of the input messages (the flattened dialects' attributes, GenAI's one
attribute): what resent history repeats."""
EMPTY_TEXT_FIELD = b"".join((b"\x4a\x1b\x0a\x15", TEXT_HEAD, b"\x12\x02\x0a\x00"))
"""Span.attributes holding `gen_ai.input.messages` as the empty string: what a span whose text
begins with a known run is parsed with in its place, so its attributes keep their order."""
SPAN_ATTRIBUTES = 9
KEY_BYTES = 256
"""Bytes hashed to find the runs a span's input may begin with."""
RUNS_PER_KEY = 8
MAX_KEYS = 16_384


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
        merged[-1] = b"".join((merged[-1], last))
    return tuple(merged)


# Where a span's input is compared with runs (its message attributes to the span's end, or
# GenAI's text), their key prefix, the remembered run it begins with (or None), and how runs
# there are remembered.
Found = tuple[int, int, bytes, Any, tuple[int, int, int]]


def resent_text(body: bytes, start: int, end: int, known: Any, limit: int) -> str:
    """The text a span's `gen_ai.input.messages` adds to the known run (a MessageRun) it begins
    with, checked as `raw_attributes` checks a string (UTF-8, the whole text within the
    attribute size limit)."""
    size: int = known.size
    chars: int = known.items.chars
    try:
        text = body[start + size : end].decode()
    except UnicodeDecodeError as exc:
        raise Undecodable(UNDECODABLE) from exc
    if chars + len(text) > limit:
        raise ItemRejected("attribute_too_large")
    return text


def next_run(body: bytes, found: Found, view: SpanView) -> Any:
    """The run the span begins its input with, remembered for the spans that follow (None when
    it has none): the known run it began with (found's, or None) followed by what it added."""
    start, end, head, known, key = found
    if not key[1]:
        return None  # nothing to find it by
    if head == TEXT_HEAD:
        return _next_text_run(body, found, view.attributes.get(TEXT_KEY))
    if known is not None:
        known_size: int = known.size
        start += known_size
    stop, count = plain_messages(body, start, end, head, RUN_GROWTH)
    if not count:
        return known
    kept = view.message_attributes[head.decode()]  # what the span added to `known`'s
    # Usually the input is nothing but the run: its list then is the run's (neither changes).
    own = kept if len(kept) == count else kept[:count]
    added = body[start:stop]
    if known is not None:
        run = MessageRun(extended_chunks(known.chunks, added), InputItems(known.items, own), head)
    else:
        run = MessageRun((added,), InputItems(None, own), head)
    KNOWN_RUNS.remember(run, key)
    return run


def _next_text_run(body: bytes, found: Found, text: object) -> Any:
    """GenAI's: the text without its closing bracket; None when it does not end with one
    (nothing can extend it)."""
    start, end, head, known, key = found
    if not isinstance(text, str) or end <= start or body[end - 1] != 0x5D:  # "]"
        return None
    if known is None:
        run = MessageRun((body[start : end - 1],), TextPieces(None, text), head)
    else:
        known_size: int = known.size
        added = body[start + known_size : end - 1]
        if not added:
            return known
        run = MessageRun(extended_chunks(known.chunks, added), TextPieces(known.items, text), head)
    KNOWN_RUNS.remember(run, key)
    return run


class KnownRuns:
    """The runs (message_runs.MessageRun) of the spans decoded lately, weakly, by how they start
    (thread-safe: the receivers' decoding threads share one)."""

    def __init__(self) -> None:
        self._runs: dict[tuple[int, int], list[weakref.ref[Any]]] = {}
        self._lock = threading.Lock()

    def find(self, body: bytes, position: int, end: int, key: tuple[int, int, int]) -> Any:
        """The longest remembered run under `key` that the bytes at `position` begin with,
        within `end`; None if there is none."""
        with self._lock:
            refs = self._runs.get(key[:2])
            if refs is None:
                return None
            runs = [run for run in [ref() for ref in refs] if run is not None]
            if len(runs) < len(refs):
                refs[:] = [weakref.ref(run) for run in runs]
        return longest_start(runs, body, position, end)

    def remember(self, run: Any, key: tuple[int, int, int]) -> None:
        """Keep `run` (a weak reference) under `key`, first. The run it extends stays until its
        holder lets it go: a request decoded twice (a retry) finds it again."""
        size: int = run.size
        if not key[1] or size < key[2]:
            return
        with self._lock:
            refs = self._runs.pop(key[:2], None)
            if refs is None and len(self._runs) >= MAX_KEYS:
                del self._runs[next(iter(self._runs))]
            kept = [weakref.ref(run)]
            for ref in refs or []:
                if ref() is not None and len(kept) < RUNS_PER_KEY:
                    kept.append(ref)
            self._runs[key[:2]] = kept  # re-inserted: the dict's order is the keys' last use

    def __len__(self) -> int:
        with self._lock:
            return sum([ref() is not None for refs in self._runs.values() for ref in refs])


KNOWN_RUNS = KnownRuns()
