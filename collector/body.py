"""Reading an OTLP/HTTP body within bounds: as sent, and again after decompression.

A compressed body is inflated with an output limit, so a decompression bomb costs at most the
configured number of bytes of memory before it is refused with 413.
"""

from __future__ import annotations

import zlib

from turnwatch.collector.otlp_common import Undecodable

GZIP_WBITS = 16 + zlib.MAX_WBITS
ZLIB_OR_GZIP_WBITS = 32 + zlib.MAX_WBITS
RAW_DEFLATE_WBITS = -zlib.MAX_WBITS


class BodyTooLarge(Exception):
    """The body passes a size cap (HTTP 413)."""


class UnsupportedEncoding(Exception):
    """A Content-Encoding the receiver does not speak (HTTP 415)."""


def _inflate(data: bytes, wbits: int, limit: int) -> bytes:
    output = bytearray()
    while True:
        inflater = zlib.decompressobj(wbits)
        try:
            output += inflater.decompress(data, limit - len(output) + 1)
        except zlib.error as exc:
            raise Undecodable("body is not validly compressed") from exc
        if len(output) > limit or inflater.unconsumed_tail:
            raise BodyTooLarge("decompressed body exceeds the limit")
        if not inflater.eof:
            raise Undecodable("compressed body is truncated")
        # A gzip body may hold several members (RFC 1952 section 2.2; `cat a.gz b.gz`): inflate
        # them all under the one limit rather than silently dropping every member after the first.
        data = inflater.unused_data
        if not data or wbits != GZIP_WBITS:
            return bytes(output)


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
