"""Resent history recognised in the request bytes, before protobuf parses it.

A stateless chat API resends the whole history with every call, and the flattened dialects
(OpenInference, OpenLLMetry) send each message as attributes of their own, so a call's input
attributes begin with the previous call's, byte for byte. The protobuf receiver keeps, for each
large span, the run of input message attributes it carries (`MessageRun`: the run's bytes as on
the wire and the checked KeyValue encodings in it); when a later span's input begins with a
remembered run, one comparison of that slice stands for parsing and checking every attribute in
it, the span is parsed without it and names the run (`SpanView.resent_run`) instead of holding
its encodings. The encodings are a chain (`InputItems`) that the flattened dialects keep as the
channel's whole input, so a span that began with the previous call's run is known to extend that
call by one identity check. The work per span is then its new attributes', not its history's.

GenAI sends the input as one JSON string (`gen_ai.input.messages`), which a resent call extends:
its closing bracket becomes a comma and the messages that follow. The run of such a span is its
text less that bracket (`TextPieces`, the text as a chain of what each call added); a later
span whose text begins with one is parsed with the attribute as the empty string in its place,
and the attribute then holds only the text that follows (`resent_text`).

Runs are remembered by where they start: a hash of the bytes that follow the first message's
attributes (a system prompt shared by every conversation of a service comes first; what follows
it tells conversations apart), with the attribute size limit they were checked under. Up to
RUNS_PER_KEY runs share one such start (conversations that open alike), and the longest that
the span begins with wins. The cache holds only weak references and hashes: a run lives as long
as the session holding its call keeps it (the channel's tail, `DeferredContent.run`), so it
keeps no content a session does not, and nothing once the session is gone.

Pure Python (not compiled with mypyc): its classes need weak references.
"""

from __future__ import annotations

import sys
import threading
import weakref
from typing import Any

from turnwatch.collector.otlp_common import ItemRejected, Undecodable
from turnwatch.collector.otlp_values import UNDECODABLE, plain_messages
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
RUN_GROWTH = 64
"""A span's run holds at most this many attributes more than the run it begins with: a span
whose run nobody keeps (a routing collector seals each call and lets it go) walks no more."""
RUNS_PER_KEY = 8
MAX_KEYS = 16_384
RUN_OVERHEAD = 120
"""Memory of a run's own record (measured with tracemalloc), beside its bytes and list."""


class InputItems:
    """The encodings of a call's input message attributes, as a chain: those it adds (`own`)
    after those of the input it resends (`before`, None for a first call). A call that resends
    the whole history then holds only what it adds, and the next call's input extends the chain
    instead of copying a list of every encoding: nothing per call walks the history."""

    __slots__ = ("before", "count", "own")

    def __init__(self, before: InputItems | None, own: list[bytes]) -> None:
        self.before = before
        self.own = own
        self.count: int = len(own) + (before.count if before is not None else 0)

    def flat(self) -> list[bytes]:
        """Every encoding, in order (for the rare input that does not extend the last)."""
        pieces = []
        link: InputItems | None = self
        while link is not None:
            pieces.append(link.own)
            link = link.before
        return [item for piece in reversed(pieces) for item in piece]


class TextPieces:
    """The text of a call's `gen_ai.input.messages` as a chain: what the call added (`own`, which
    ends with the closing bracket) after the text it resent (`before`, whose closing bracket
    `own` replaced). A call that resends the whole history holds only what it adds."""

    __slots__ = ("before", "chars", "own")

    def __init__(self, before: TextPieces | None, own: str) -> None:
        self.before = before
        self.own = own
        # Characters of the text without its closing bracket: what the next call repeats.
        self.chars: int = len(own) - 1 + (before.chars if before is not None else 0)

    def text(self) -> str:
        """The whole text (for the rare call that does not extend the last)."""
        pieces = []
        link: TextPieces | None = self
        while link is not None:
            pieces.append(link.own)
            link = link.before
        pieces.reverse()
        return "".join([piece[:-1] for piece in pieces[:-1]]) + pieces[-1]


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


def resent_text(body: bytes, start: int, end: int, known: MessageRun, limit: int) -> str:
    """The text a span's `gen_ai.input.messages` adds to the known run it begins with, checked as
    `raw_attributes` checks a string (UTF-8, the whole text within the attribute size limit)."""
    try:
        text = body[start + known.size : end].decode()
    except UnicodeDecodeError as exc:
        raise Undecodable(UNDECODABLE) from exc
    if known.items.chars + len(text) > limit:
        raise ItemRejected("attribute_too_large")
    return text


def next_run(body: bytes, found: tuple[Any, ...], view: Any) -> Any:
    """The run the span begins its input with, remembered for the spans that follow (None when
    it has none): the known run it began with (found's, or None) followed by what it added.
    `found` is (start, end) of where runs are compared, the input's head, the known run and
    the key runs are remembered by; `view` is the span decoded."""
    start, end, head, known, key = found
    if not key[1]:
        return None  # nothing to find it by
    if head == TEXT_HEAD:
        return _next_text_run(body, found, view.attributes.get(TEXT_KEY))
    start = start + known.size if known is not None else start
    stop, count = plain_messages(body, start, end, head, RUN_GROWTH)
    if not count:
        return known
    kept = view.message_attributes[head.decode()]  # what the span added to `known`'s
    # Usually the input is nothing but the run: its list then is the run's (neither changes).
    own = kept if len(kept) == count else kept[:count]
    added = body[start:stop]
    if known is not None:
        run = known.extended(added, InputItems(known.items, own))
    else:
        run = MessageRun((added,), InputItems(None, own), head)
    KNOWN_RUNS.remember(run, key)
    return run


def _next_text_run(body: bytes, found: tuple[Any, ...], text: object) -> Any:
    """GenAI's: the text without its closing bracket; None when it does not end with one
    (nothing can extend it)."""
    start, end, head, known, key = found
    if not isinstance(text, str) or end <= start or body[end - 1] != 0x5D:  # "]"
        return None
    if known is None:
        run = MessageRun((body[start : end - 1],), TextPieces(None, text), head)
    else:
        added = body[start + known.size : end - 1]
        if not added:
            return known
        run = known.extended(added, TextPieces(known.items, text))
    KNOWN_RUNS.remember(run, key)
    return run


def listed(items: object) -> list[Any] | None:
    """`items` (a chain or a list of encodings) as a list, or None when it is neither."""
    if isinstance(items, InputItems):
        return items.flat()
    return items if isinstance(items, list) else None


class MessageRun:
    """A run of consecutive input message attributes of one span: its fields' bytes as they were
    on the wire, and the KeyValue encodings of those fields (`items`), each checked as
    `raw_attributes` checks what it keeps undecoded.

    The bytes are a few chunks, each at least twice as long as the next (`extended`): a run that
    extends another shares all but its last chunks, so making it copies what the span adds (and
    now and then a merge), not the history, and finding it compares a few slices."""

    __slots__ = ("__weakref__", "chunks", "head", "items", "size")

    def __init__(self, chunks: tuple[bytes, ...], items: Any, head: bytes) -> None:
        self.chunks = chunks
        self.size = sum([len(chunk) for chunk in chunks])
        self.items = items
        self.head = head

    def extended(self, added: bytes, items: Any) -> MessageRun:
        """This run followed by `added`, which `items` (a chain extending this run's) holds."""
        chunks = [*self.chunks, added]
        while len(chunks) > 1 and len(chunks[-2]) < 2 * len(chunks[-1]):
            chunks[-2:] = [chunks[-2] + chunks[-1]]
        return MessageRun(tuple(chunks), items, self.head)

    def starts(self, body: bytes, position: int, end: int) -> bool:
        """Whether the bytes at `position` (within `end`) begin with this run."""
        if position + self.size > end:
            return False
        for chunk in self.chunks:
            if not body.startswith(chunk, position):
                return False
            position += len(chunk)
        return True

    def held_bytes(self) -> int:
        """What the run holds beyond its encodings (which the calls' contents hold)."""
        chunks = sum([sys.getsizeof(chunk) for chunk in self.chunks])
        return RUN_OVERHEAD + chunks + sys.getsizeof(self.chunks)


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


class KnownRuns:
    """The runs of the spans decoded lately, by how they start (thread-safe: the receivers'
    decoding threads share one)."""

    def __init__(self) -> None:
        self._runs: dict[tuple[int, int], list[weakref.ref[MessageRun]]] = {}
        self._lock = threading.Lock()

    @staticmethod
    def locate(body: bytes, start: int, end: int) -> tuple[int, bytes]:
        """(position, head) of the span at [start, end)'s first input message attribute, or
        (-1, b"") when it has none."""
        position = first_attribute(body, start, end, SPAN_ATTRIBUTES, INPUT_HEADS)
        if position < 0 or body[position] != 0x4A:  # a tag in more bytes than it needs
            return -1, b""
        key_start = length_at(body, position + 1, end)[0] + 2  # the KeyValue's 0x0A, key length
        head = next(head for head in INPUT_HEADS if body.startswith(head, key_start))
        return position, head

    @staticmethod
    def region(body: bytes, position: int, end: int, head: bytes) -> tuple[int, int, int]:
        """(start, end) of where a run is compared for the input found at `position` (the
        attributes from there to the span's `end`, or GenAI's text), and the end of what a known
        run's bytes replace; (-1, -1, -1) when there is nothing to compare."""
        if position < 0:
            return -1, -1, -1
        if head == TEXT_HEAD:
            return text_value(body, position, end)
        return position, end, end

    @staticmethod
    def key(body: bytes, position: int, end: int, head: bytes, limit: int) -> tuple[int, int, int]:
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
        best: Any = None
        for run in runs:
            if (best is None or run.size > best.size) and run.starts(body, position, end):
                best = run
        return best

    def remember(self, run: MessageRun, key: tuple[int, int, int]) -> None:
        """Keep `run` (a weak reference) under `key`, first. The run it extends stays until its
        holder lets it go: a request decoded twice (a retry) finds it again."""
        if not key[1] or run.size < key[2]:
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
