"""Reading an OTLP/HTTP body within bounds: as sent, and again after decompression.

A compressed body is inflated with an output limit, so a decompression bomb costs at most the
configured number of bytes of memory before it is refused with 413. Inflation is linear in the
body's size whatever its shape: input is fed in blocks that start small at each gzip member and
double while the member lasts, so the leftover zlib copies at the end of a member (its
`unused_data`) is never more than one block. Feeding the whole rest of the body to each member
made a body of many small members quadratic: 8 MiB of them took about 100 s.
"""

from __future__ import annotations

import zlib

from turnwatch.collector.otlp_common import TooLarge, Undecodable

GZIP_WBITS = 16 + zlib.MAX_WBITS
ZLIB_OR_GZIP_WBITS = 32 + zlib.MAX_WBITS
RAW_DEFLATE_WBITS = -zlib.MAX_WBITS
FIRST_BLOCK = 64
LARGEST_BLOCK = 1024 * 1024


class BodyTooLarge(TooLarge):
    """The body passes a size cap (HTTP 413)."""

    def __init__(self, message: str) -> None:
        super().__init__("too_large", message)


class UnsupportedEncoding(Exception):
    """A Content-Encoding the receiver does not speak (HTTP 415)."""


def _inflate(data: bytes, wbits: int, limit: int) -> bytes:
    view = memoryview(data)
    output = bytearray()
    inflater = zlib.decompressobj(wbits)
    position, block = 0, FIRST_BLOCK
    pending = b""  # input zlib handed back after a member ended: the next member's start
    while pending or position < len(view):
        if pending:
            piece: bytes | memoryview = pending
            pending = b""
        else:
            piece = view[position : position + block]
            position += len(piece)
            block = min(block * 2, LARGEST_BLOCK)
        try:
            output += inflater.decompress(piece, limit - len(output) + 1)
        except zlib.error as exc:
            raise Undecodable("body is not validly compressed") from exc
        if len(output) > limit or inflater.unconsumed_tail:
            raise BodyTooLarge("decompressed body exceeds the limit")
        if inflater.eof:
            # A gzip body may hold several members (RFC 1952 section 2.2; `cat a.gz b.gz`):
            # inflate them all under the one limit rather than silently dropping all but one.
            if wbits != GZIP_WBITS:
                return bytes(output)
            pending = inflater.unused_data
            if not pending and position >= len(view):
                return bytes(output)
            inflater = zlib.decompressobj(wbits)
            block = FIRST_BLOCK
    raise Undecodable("compressed body is truncated")


def decompress(data: bytes, encoding: str, limit: int) -> bytes:
    encoding = encoding.strip().lower()
    if encoding in ("", "identity"):
        return data
    if encoding in ("gzip", "x-gzip"):
        return _inflate(data, GZIP_WBITS, limit)
    if encoding == "deflate":
        # HTTP's "deflate" is the zlib format, but some clients send raw deflate streams.
        try:
            return _inflate(data, ZLIB_OR_GZIP_WBITS, limit)
        except Undecodable:
            return _inflate(data, RAW_DEFLATE_WBITS, limit)
    raise UnsupportedEncoding(encoding)
