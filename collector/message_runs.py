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

Pure Python (not compiled with mypyc): its classes need weak references. What runs for every
large span (walking its fields, comparing bytes, the cache of runs `KNOWN_RUNS`, making the next
run) is in run_bytes.py, which is compiled.
"""

from __future__ import annotations

import sys
from typing import Any

RUN_GROWTH = 64
"""A span's run holds at most this many attributes more than the run it begins with: a span
whose run nobody keeps (a routing collector seals each call and lets it go) walks no more."""
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


def listed(items: object) -> list[Any] | None:
    """`items` (a chain or a list of encodings) as a list, or None when it is neither."""
    if isinstance(items, InputItems):
        return items.flat()
    return items if isinstance(items, list) else None


class MessageRun:
    """A run of consecutive input message attributes of one span: its fields' bytes as they were
    on the wire, and the KeyValue encodings of those fields (`items`), each checked as
    `raw_attributes` checks what it keeps undecoded.

    The bytes are a few chunks, each at least twice as long as the next
    (`run_bytes.extended_chunks`): a run that
    extends another shares all but its last chunks, so making it copies what the span adds (and
    now and then a merge), not the history, and finding it compares a few slices."""

    __slots__ = ("__weakref__", "chunks", "head", "items", "size")

    def __init__(self, chunks: tuple[bytes, ...], items: Any, head: bytes) -> None:
        self.chunks = chunks
        self.size = sum([len(chunk) for chunk in chunks])
        self.items = items
        self.head = head

    def held_bytes(self) -> int:
        """What the run holds beyond its encodings (which the calls' contents hold)."""
        chunks = sum([sys.getsizeof(chunk) for chunk in self.chunks])
        return RUN_OVERHEAD + chunks + sys.getsizeof(self.chunks)
