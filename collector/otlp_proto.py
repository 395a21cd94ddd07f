"""OTLP protobuf requests (HTTP `application/x-protobuf` and gRPC) into span and log views.

Logs are parsed with the stock OTLP classes. Traces, the bulk of the traffic, take a faster path
(the second half of this file) that reads span attributes from their raw encoding; the stock
path, `trace_request_to_views`, is the reference it is tested against
(tests/test_otlp_fast_decode.py) and serves callers that already hold a parsed request.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from functools import partial
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1 import common_pb2
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.resource.v1 import resource_pb2
from opentelemetry.proto.trace.v1 import trace_pb2
from turnwatch.collector.otlp_common import (
    MAX_VALUE_DEPTH,
    DecodeLimits,
    DecodeResult,
    ItemRejected,
    Undecodable,
    ViewT,
)
from turnwatch.collector.records import LogView, SpanEvent, SpanView


def _any_value(value: AnyValue, limits: DecodeLimits, depth: int) -> Any:
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
        return [_any_value(item, limits, depth + 1) for item in value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: _any_value(kv.value, limits, depth + 1) for kv in value.kvlist_value.values}
    if kind == "bytes_value":
        if len(value.bytes_value) > limits.max_attribute_bytes:
            raise ItemRejected("attribute_too_large")
        return base64.b64encode(value.bytes_value).decode("ascii")
    return None


def _attributes(pairs: Any, limits: DecodeLimits) -> dict[str, Any]:
    # String values are most attributes and all message content: a non-empty `string_value`
    # can only be a set string, so reading it first skips WhichOneof (a third of this loop).
    attributes: dict[str, Any] = {}
    limit = limits.max_attribute_bytes
    for kv in pairs:
        value = kv.value
        text = value.string_value
        if text:
            if len(text) > limit:
                raise ItemRejected("attribute_too_large")
            attributes[kv.key] = text
        else:
            attributes[kv.key] = _any_value(value, limits, 0)
    return attributes


def _id(raw: bytes, length: int, *, required: bool) -> str:
    """A binary trace or span id as lower-case hex; an all-zero id counts as absent."""
    if len(raw) == length and raw.count(0) != length:
        return raw.hex()
    if len(raw) != length:
        if raw or required:
            raise ItemRejected("invalid_id" if raw else "missing_id")
        return ""
    if required:
        raise ItemRejected("invalid_id")
    return ""


def _resource_attributes(pairs: Any, limits: DecodeLimits) -> dict[str, Any]:
    try:
        return _attributes(pairs, limits)
    except ItemRejected:
        return {}


def _views(
    resources: Any,
    scopes_field: str,
    items_field: str,
    build: Callable[[Any, dict[str, Any], str, DecodeLimits], ViewT],
    limits: DecodeLimits,
    on_reject: Callable[[Any], None] | None = None,
) -> DecodeResult[ViewT]:
    """Walk resource -> scope -> items; a rejected item costs itself, not the request.

    `on_reject` sees each rejected item first and may still refuse the whole request."""
    result: DecodeResult[ViewT] = DecodeResult()
    for block in resources:
        resource = _resource_attributes(block.resource.attributes, limits)
        for scope_block in getattr(block, scopes_field):
            scope_name = scope_block.scope.name
            # A slice of a upb repeated field iterates faster than the field itself.
            for item in getattr(scope_block, items_field)[:]:
                try:
                    result.items.append(build(item, resource, scope_name, limits))
                except ItemRejected as rejection:
                    if on_reject is not None:
                        on_reject(item)
                    result.reject(rejection.reason)
    return result


def _span_view(
    span: Any,
    resource: dict[str, Any],
    scope_name: str,
    limits: DecodeLimits,
    read_attributes: Callable[[Any, DecodeLimits], dict[str, Any]] = _attributes,
) -> SpanView:
    events = span.events
    # Positional: this runs for every span, and keyword arguments cost a microsecond here.
    # The order is SpanView's field order.
    return SpanView(
        _id(span.trace_id, 16, required=True),
        _id(span.span_id, 8, required=True),
        _id(span.parent_span_id, 8, required=False),
        span.name,
        span.kind,
        span.start_time_unix_nano,
        span.end_time_unix_nano,
        read_attributes(span.attributes, limits),
        [
            SpanEvent(event.name, event.time_unix_nano, read_attributes(event.attributes, limits))
            for event in events
        ]
        if events
        else [],
        span.status.code,
        resource,
        scope_name,
        span.dropped_attributes_count,
    )


def trace_request_to_views(
    request: ExportTraceServiceRequest, limits: DecodeLimits
) -> DecodeResult[SpanView]:
    return _views(request.resource_spans, "scope_spans", "spans", _span_view, limits)


def _parse(request_class: Any, body: bytes, name: str) -> Any:
    request = request_class()
    try:
        request.ParseFromString(body)
    except (DecodeError, RecursionError, ValueError) as exc:
        raise Undecodable(f"body is not an {name}") from exc
    return request


def decode_logs(body: bytes, limits: DecodeLimits) -> DecodeResult[LogView]:
    request = _parse(ExportLogsServiceRequest, body, "ExportLogsServiceRequest")
    return logs_request_to_views(request, limits)


def _log_view(
    record: Any, resource: dict[str, Any], scope_name: str, limits: DecodeLimits
) -> LogView:
    return LogView(
        time_ns=record.time_unix_nano or record.observed_time_unix_nano,
        trace_id=_id(record.trace_id, 16, required=False),
        span_id=_id(record.span_id, 8, required=False),
        event_name=record.event_name,
        body=_any_value(record.body, limits, 0) if record.HasField("body") else None,
        attributes=_attributes(record.attributes, limits),
        resource=resource,
        scope_name=scope_name,
        dropped_attributes=record.dropped_attributes_count,
    )


def logs_request_to_views(
    request: ExportLogsServiceRequest, limits: DecodeLimits
) -> DecodeResult[LogView]:
    return _views(request.resource_logs, "scope_logs", "log_records", _log_view, limits)


# --- Fast trace path --------------------------------------------------------------------------
# decode_traces parses into a runtime-built twin of ExportTraceServiceRequest whose
# Span.attributes and Span.Event.attributes are `bytes`: upb then hands each KeyValue back as one
# bytes object instead of KeyValue + AnyValue wrappers (creating those wrappers was over half the
# cost of decoding a span), and the common encodings (string values, small ints) are read by
# hand; short KeyValues that describe the call (CACHEABLE_KEYS) are cached whole. Anything else
# goes through the stock KeyValue and `_any_value`. Results, rejection reasons and 400s are the
# same as parsing with the stock classes (`trace_request_to_views`).


def _raw_attributes_request_class() -> Any:
    """ExportTraceServiceRequest's twin whose Span.attributes and Span.Event.attributes are
    `bytes`: the same wire format, but upb hands each KeyValue back as one bytes object (no
    KeyValue/AnyValue wrappers) and leaves its UTF-8 check to the caller's decode. Span.status
    stays a message: a singular message sent twice is merged by protobuf, which bytes are not."""
    field_type = descriptor_pb2.FieldDescriptorProto
    package = "turnwatch.rawattrs"
    pool = descriptor_pool.DescriptorPool()
    for module in (common_pb2, resource_pb2):
        proto = descriptor_pb2.FileDescriptorProto()
        module.DESCRIPTOR.CopyToProto(proto)
        pool.Add(proto)
    proto = descriptor_pb2.FileDescriptorProto()
    trace_pb2.DESCRIPTOR.CopyToProto(proto)  # trace.proto, every field as installed
    proto.name, proto.package = "turnwatch/rawattrs.proto", package
    old_prefix = f".{trace_pb2.DESCRIPTOR.package}."

    def patch(message: Any, raw_fields: tuple[str, ...]) -> None:
        for field in message.field:
            if field.type_name.startswith(old_prefix):
                field.type_name = f".{package}." + field.type_name[len(old_prefix) :]
            if field.name in raw_fields:
                field.type = field_type.TYPE_BYTES
                field.ClearField("type_name")
        for nested in message.nested_type:
            patch(nested, ("attributes",) if nested.name == "Event" else ())

    for message in proto.message_type:
        patch(message, ("attributes",) if message.name == "Span" else ())
    request = proto.message_type.add(name="ExportTraceServiceRequest")
    request.field.add(
        name="resource_spans",
        number=1,
        type=field_type.TYPE_MESSAGE,
        label=field_type.LABEL_REPEATED,
        type_name=f".{package}.ResourceSpans",
    )
    pool.Add(proto)
    return message_factory.GetMessageClass(
        pool.FindMessageTypeByName(f"{package}.ExportTraceServiceRequest")
    )


RawAttributesTraceRequest = _raw_attributes_request_class()

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


def _varint(n: int) -> bytes:
    out = bytearray()
    while n > 127:
        out.append((n & 127) | 128)
        n >>= 7
    out.append(n)
    return bytes(out)


# r (bytes after the key) -> the exact bytes between key and text when the value is nothing but
# AnyValue.string_value (canonical, minimal varints); b"\xff" (never matches a 0x12 tag) if none.
_STRING_HEADERS: dict[int, bytes] = {}


def _string_header(rest: int) -> bytes:
    header = b"\xff"
    for header_len in range(4, 23):
        text_len = rest - header_len
        if text_len < 0:
            break
        inner = b"\n" + _varint(text_len)
        candidate = b"\x12" + _varint(len(inner) + text_len) + inner
        if len(candidate) == header_len:
            header = candidate
            break
    if len(_STRING_HEADERS) >= 8192:
        _STRING_HEADERS.clear()
    _STRING_HEADERS[rest] = header
    return header


def _kv_slow(raw: bytes, limits: DecodeLimits) -> tuple[str, Any]:
    try:
        kv = KeyValue.FromString(raw)
    except (DecodeError, RecursionError, ValueError) as exc:
        raise Undecodable("body is not an ExportTraceServiceRequest") from exc
    return kv.key, _any_value(kv.value, limits, 0)


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
                raise Undecodable("body is not an ExportTraceServiceRequest") from exc
    return _kv_slow(raw, limits)


def _raw_attributes(raws: Any, limits: DecodeLimits) -> dict[str, Any]:
    """Same dict as otlp_proto._attributes, from undecoded KeyValue bytes."""
    attributes: dict[str, Any] = {}
    limit = limits.max_attribute_bytes
    # Cached values are shorter than their raw bytes, so they pass any limit >= _KV_CACHE_RAW_MAX.
    cache = _KV_CACHE if limit >= _KV_CACHE_RAW_MAX else {}
    header_get = _STRING_HEADERS.get
    for raw in raws[:]:  # slicing a upb container is faster than iterating it
        size = len(raw)
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
                    raise Undecodable("body is not an ExportTraceServiceRequest") from exc
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


def decode_traces(body: bytes, limits: DecodeLimits) -> DecodeResult[SpanView]:
    request = _parse(RawAttributesTraceRequest, body, "ExportTraceServiceRequest")
    # What the stock parser would have refused in a rejected span is still a 400 (_check_wire).
    return _views(
        request.resource_spans,
        "scope_spans",
        "spans",
        partial(_span_view, read_attributes=_raw_attributes),
        limits,
        on_reject=_check_wire,
    )


def _field(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _check_wire(span: Any) -> None:
    """Raise Undecodable if the stock parser would have refused this rejected span's raw parts.

    Re-wraps them at their real depth in a stock ExportTraceServiceRequest, so UTF-8 checks and
    upb's nesting limit apply exactly as before. Runs only for rejected spans."""
    parts = [_field(9, raw) for raw in span.attributes]
    for event in span.events:
        parts.append(_field(11, b"".join([_field(3, raw) for raw in event.attributes])))
    try:
        ExportTraceServiceRequest.FromString(_field(1, _field(2, _field(2, b"".join(parts)))))
    except (DecodeError, RecursionError, ValueError) as exc:
        raise Undecodable("body is not an ExportTraceServiceRequest") from exc
