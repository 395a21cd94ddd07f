"""OTLP attribute values (AnyValue, KeyValue) into Python values, from parsed messages or raw bytes.

`any_value` and `attributes` convert the stock classes. `raw_attributes` reads the undecoded
KeyValue encodings the fast paths of otlp_proto.py hand it: the common encodings (string values,
small ints) by hand, short KeyValues that describe the call (CACHEABLE_KEYS) from a cache, and
anything else through the stock KeyValue. Both give the same dict, and the same rejections.

A value nested deeper than upb's recursion limit (about 48 arrays or 32 kvlists below a
KeyValue) cannot be parsed; `otlp_wire.nested_too_deep` tells it from a broken encoding, so it
costs its span, as any value nested past MAX_VALUE_DEPTH does, not the whole request.

Every array and kvlist element counts against the request's `max_values`.

The caches are shared by the decoding threads: each access is a single dict operation, and a
lost or doubled entry is only a miss.
"""

from __future__ import annotations

import base64
from typing import Any

from google.protobuf.message import DecodeError
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from turnwatch.collector.otlp_common import (
    MAX_VALUE_DEPTH,
    DecodeLimits,
    ItemRejected,
    Undecodable,
)
from turnwatch.collector.otlp_wire import KEY_VALUE, length_at, nested_too_deep

UNDECODABLE = "body is not an OTLP request"


def any_value(value: AnyValue, limits: DecodeLimits, depth: int) -> Any:
    kind = value.WhichOneof("value")
    if kind == "string_value":
        text = value.string_value
        if len(text) > limits.max_attribute_bytes:
            raise ItemRejected("attribute_too_large")
        return text
    if kind == "int_value":
        return value.int_value
    if kind == "bool_value":
        return value.bool_value
    if kind == "double_value":
        return value.double_value
    if depth >= MAX_VALUE_DEPTH and kind in ("array_value", "kvlist_value"):
        raise ItemRejected("attribute_too_deep")
    if kind == "array_value":
        items = value.array_value.values
        limits.take(len(items))
        return [any_value(item, limits, depth + 1) for item in items]
    if kind == "kvlist_value":
        pairs = value.kvlist_value.values
        limits.take(len(pairs))
        return {kv.key: any_value(kv.value, limits, depth + 1) for kv in pairs}
    if kind == "bytes_value":
        if len(value.bytes_value) > limits.max_attribute_bytes:
            raise ItemRejected("attribute_too_large")
        return base64.b64encode(value.bytes_value).decode("ascii")
    return None


def attributes(pairs: Any, limits: DecodeLimits) -> dict[str, Any]:
    # String values are most attributes and all message content: a non-empty `string_value`
    # can only be a set string, so reading it first skips WhichOneof (a third of this loop).
    found: dict[str, Any] = {}
    limit = limits.max_attribute_bytes
    for kv in pairs:
        value = kv.value
        text = value.string_value
        if text:
            if len(text) > limit:
                raise ItemRejected("attribute_too_large")
            found[kv.key] = text
        else:
            found[kv.key] = any_value(value, limits, 0)
    return found


# Whole short KeyValue encodings -> (key, value): the attributes that describe a model call
# (operation, provider, model, token counts) repeat across spans.
_KV_CACHE: dict[bytes, tuple[str, Any]] = {}
_KV_CACHE_RAW_MAX = 128
_KV_CACHE_ENTRIES = 4096
_CACHEABLE = (str, int, float, bool)

CACHEABLE_KEYS = frozenset(
    {
        "gen_ai.operation.name",
        "gen_ai.provider.name",
        "gen_ai.system",
        "gen_ai.request.model",
        "gen_ai.response.model",
        "gen_ai.output.type",
        "gen_ai.tool.name",
        "gen_ai.tool.type",
        "gen_ai.agent.name",
        "gen_ai.usage.input_tokens",
        "gen_ai.usage.output_tokens",
        "gen_ai.usage.prompt_tokens",
        "gen_ai.usage.completion_tokens",
        "gen_ai.request.max_tokens",
        "gen_ai.request.temperature",
        "gen_ai.request.top_p",
        "llm.provider",
        "llm.system",
        "llm.model_name",
        "llm.token_count.prompt",
        "llm.token_count.completion",
        "llm.token_count.total",
        "llm.request.type",
        "openinference.span.kind",
        "traceloop.span.kind",
        "server.address",
        "server.port",
        "error.type",
    }
)
"""Only these are cached: the cache outlives sessions, so it holds nothing that can carry
conversation content or name a person (message text, user and conversation ids)."""


def _remember(cache: dict[bytes, tuple[str, Any]], raw: bytes, pair: tuple[str, Any]) -> None:
    if pair[0] in CACHEABLE_KEYS and type(pair[1]) in _CACHEABLE:
        if len(cache) >= _KV_CACHE_ENTRIES:
            cache.clear()
        cache[raw] = pair


def encode_varint(n: int) -> bytes:
    out = bytearray()
    while n > 127:
        out.append((n & 127) | 128)
        n >>= 7
    out.append(n)
    return bytes(out)


# r (bytes after the key) -> the exact bytes between key and text when the value is nothing but
# AnyValue.string_value (canonical, minimal varints); b"\xff" (never matches a 0x12 tag) if none.
_STRING_HEADERS: dict[int, bytes] = {}
_SPAN_ATTRIBUTE_TAG = 0x4A  # Span.attributes: field 9, length-delimited


def _string_header(rest: int) -> bytes:
    header = b"\xff"
    for header_len in range(4, 23):
        text_len = rest - header_len
        if text_len < 0:
            break
        inner = b"".join((b"\n", encode_varint(text_len)))
        candidate = b"".join((b"\x12", encode_varint(len(inner) + text_len), inner))
        if len(candidate) == header_len:
            header = candidate
            break
    if len(_STRING_HEADERS) >= 8192:
        _STRING_HEADERS.clear()
    _STRING_HEADERS[rest] = header
    return header


def plain_messages(body: bytes, position: int, end: int, head: bytes, most: int) -> tuple[int, int]:
    """(end, count) of the run of Span.attributes fields from `position` that are KeyValues under
    `head` (a key under 128 bytes) with nothing but a string value, encoded as `raw_attributes`
    keeps message attributes undecoded; the run ends at the first field that is not one, or
    after `most` fields."""
    count = 0
    while count < most and position < end and body[position] == _SPAN_ATTRIBUTE_TAG:
        start, stop = length_at(body, position + 1, end)
        key_end = start + 2 + body[start + 1] if stop - start > 5 else stop
        if not (
            key_end < stop
            and body[start] == 10
            and body[start + 1] < 128
            and body.startswith(head, start + 2, key_end)
        ):
            break
        rest = stop - key_end
        header = _STRING_HEADERS.get(rest) or _string_header(rest)
        if not body.startswith(header, key_end, stop):
            break
        position = stop
        count += 1
    return position, count


def parse_key_value(raw: bytes) -> KeyValue:
    """The stock KeyValue; ItemRejected when nested too deep to parse, else Undecodable."""
    try:
        return KeyValue.FromString(raw)
    except (DecodeError, RecursionError, ValueError) as exc:
        if nested_too_deep(raw, KEY_VALUE):
            raise ItemRejected("attribute_too_deep") from None
        raise Undecodable(UNDECODABLE) from exc


def _kv_slow(raw: bytes, limits: DecodeLimits) -> tuple[str, Any]:
    kv = parse_key_value(raw)
    return kv.key, any_value(kv.value, limits, 0)


def _kv_other(raw: bytes, size: int, limits: DecodeLimits) -> tuple[str, Any]:
    """(key, value) of a KeyValue that is not a plain string: int_value in [0, 2**63) by hand,
    anything else (or any other encoding) through the stock KeyValue."""
    key_end = raw[1] + 2 if size > 5 and raw[0] == 10 else 255
    rest = size - key_end
    # KeyValue{key, value: AnyValue{int_value}}: 0x0A len key 0x12 len 0x18 varint(1-9 bytes)
    if (
        4 <= rest <= 12
        and raw[key_end + 2] == 0x18
        and raw[key_end] == 0x12
        and raw[key_end + 1] == rest - 2
    ):
        # Every byte but the last carries the continuation bit; otherwise the stock path decides.
        value = shift = 0
        for byte in raw[key_end + 3 : -1]:
            if byte < 128:
                value = -1
                break
            value |= (byte & 127) << shift
            shift += 7
        else:
            byte = raw[-1]
            value = value | byte << shift if byte < 128 else -1
        if value >= 0:
            try:
                return raw[2:key_end].decode(), value
            except UnicodeDecodeError as exc:
                raise Undecodable(UNDECODABLE) from exc
    return _kv_slow(raw, limits)


MESSAGE_HEADS = (
    "llm.input_messages.",
    "llm.output_messages.",
    "gen_ai.prompt.",
    "gen_ai.completion.",
)
"""Key prefixes of the flattened dialects' message attributes (OpenInference, OpenLLMetry)."""
_MESSAGE_HEADS = tuple([head.encode() for head in MESSAGE_HEADS])


def _keep_message(raw: bytes, limits: DecodeLimits) -> tuple[str, Any] | None:
    """Check a message attribute whose value is not a plain string as `raw_attributes` would
    decode it; a KeyValue whose key is not the one it starts with (sent twice) is returned as
    decoded, to be kept decoded."""
    pair = _kv_other(raw, len(raw), limits)
    return pair if pair[0] != raw[2 : raw[1] + 2].decode() else None


def raw_attributes(
    raws: Any, limits: DecodeLimits, messages: dict[str, list[bytes]] | None = None
) -> dict[str, Any]:
    """Same dict as `attributes`, from undecoded KeyValue bytes; with `messages`, attributes
    under MESSAGE_HEADS are checked and left there undecoded (keys under 128 bytes)."""
    attributes: dict[str, Any] = {}
    limit = limits.max_attribute_bytes
    # Cached values are shorter than their raw bytes, so they pass any limit >= _KV_CACHE_RAW_MAX.
    cache = _KV_CACHE if limit >= _KV_CACHE_RAW_MAX else {}
    header_get = _STRING_HEADERS.get
    head: bytes | None = None  # the message key prefix last seen (a span carries one or two)
    kept: list[bytes] = []
    for raw in raws[:]:  # slicing a upb container is faster than iterating it
        size = len(raw)
        if messages is not None and raw.startswith(_MESSAGE_HEADS, 2) and raw[0] == 10:
            key_end = raw[1] + 2
            if key_end < 130:
                # Checked as below (a string's text and key decode, within the limit), kept.
                header = header_get(size - key_end) or _string_header(size - key_end)
                start = key_end + len(header)
                if raw.startswith(header, key_end):
                    try:
                        text = raw[start:].decode()
                        raw[2:key_end].decode()
                    except UnicodeDecodeError as exc:
                        raise Undecodable(UNDECODABLE) from exc
                    if size - start > limit and len(text) > limit:
                        raise ItemRejected("attribute_too_large")
                else:
                    pair = _keep_message(raw, limits)
                    if pair is not None:
                        attributes[pair[0]] = pair[1]
                        continue
                if head is None or not raw.startswith(head, 2):
                    head = next(h for h in _MESSAGE_HEADS if raw.startswith(h, 2))
                    kept = messages.setdefault(head.decode(), [])
                kept.append(raw)
                continue
        if size < _KV_CACHE_RAW_MAX:
            hit = cache.get(raw)
            if hit is not None:
                attributes[hit[0]] = hit[1]
                continue
            rest = size - raw[1] - 2 if size > 5 else 0
            if rest < 4 or (rest <= 12 and raw[size - rest + 2] == 0x18):  # int_value, or tiny
                hit = _kv_other(raw, size, limits)
                attributes[hit[0]] = hit[1]
                _remember(cache, raw, hit)
                continue
        # KeyValue{key (< 128 bytes), value: AnyValue{string_value}}:
        # 0x0A len key 0x12 len 0x0A len text
        key_end = raw[1] + 2
        if raw[0] == 10 and key_end < 130:
            header = header_get(size - key_end) or _string_header(size - key_end)
            start = key_end + len(header)
            if raw[key_end:start] == header:
                try:
                    text = raw[start:].decode()
                    key = raw[2:key_end].decode()
                except UnicodeDecodeError as exc:
                    raise Undecodable(UNDECODABLE) from exc
                if len(text) > limit:
                    raise ItemRejected("attribute_too_large")
                attributes[key] = text
                if size < _KV_CACHE_RAW_MAX:
                    _remember(cache, raw, (key, text))
                continue
        hit = _kv_other(raw, size, limits)
        attributes[hit[0]] = hit[1]
        if size < _KV_CACHE_RAW_MAX:
            _remember(cache, raw, hit)
    return attributes


def check_raw_attributes(raws: Any) -> None:
    """Raise Undecodable if an attribute of a rejected item would have been refused: reading it
    stopped at the rejection, and a request holding an undecodable attribute is a 400 whatever
    else it holds. A value nested too deep to parse is no reason (it costs only its item)."""
    for raw in raws[:]:
        try:
            parse_key_value(raw)
        except ItemRejected:
            continue
