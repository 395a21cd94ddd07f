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

Runs are remembered by where they start: a hash of the bytes that follow the first message's
attributes (a system prompt shared by every conversation of a service comes first; what follows
it tells conversations apart), with the attribute size limit they were checked under. Up to
RUNS_PER_KEY runs share one such start (conversations that open alike), and the longest that
the span begins with wins. The cache holds only weak references and hashes: a run lives as long
as the session holding its call keeps it (the channel's tail, `FlattenedContent.run`), so it
keeps no content a session does not, and nothing once the session is gone.

Pure Python (not compiled with mypyc): its classes need weak references.
"""

from __future__ import annotations

import sys
import threading
import weakref
from typing import Any

from turnwatch.collector.otlp_wire import first_attribute, length_at

INPUT_HEADS = (b"llm.input_messages.", b"gen_ai.prompt.")
"""Key prefixes of the flattened dialects' input messages: what resent history repeats."""
SPAN_ATTRIBUTES = 9
KEY_BYTES = 256
"""Bytes hashed to find the runs a span's input may begin with."""
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

    def __init__(self, chunks: tuple[bytes, ...], items: InputItems, head: bytes) -> None:
        self.chunks = chunks
        self.size = sum([len(chunk) for chunk in chunks])
        self.items = items
        self.head = head

    def extended(self, added: bytes, own: list[bytes]) -> MessageRun:
        """This run followed by `added` (the fields of the encodings `own`)."""
        chunks = [*self.chunks, added]
        while len(chunks) > 1 and len(chunks[-2]) < 2 * len(chunks[-1]):
            chunks[-2:] = [chunks[-2] + chunks[-1]]
        return MessageRun(tuple(chunks), InputItems(self.items, own), self.head)

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
    def key(body: bytes, position: int, end: int, head: bytes, limit: int) -> tuple[int, int, int]:
        """(limit, hash, reach): how runs at `position` are found, and how far from it the bytes
        hashed reach (a run shorter than that is not remembered); hash 0 when there are none."""
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
