"""OTLP/JSON requests into span and log views.

Parsed with orjson and mapped by hand: `google.protobuf.json_format` is about eight times slower
and decodes the hex trace ids of OTLP/JSON as base64. OTLP/JSON rules applied here: ids are hex,
keys are lowerCamelCase (snake_case also accepted, as protobuf's JSON mapping does), 64-bit
integers may be strings, enums are integers, unknown fields are ignored.

Bounds: orjson builds the whole document, up to about twenty times the body's size for tiny
values, so a body that could hold more than `max_values` values (two bytes each at least) has
them counted first: every `,`, `[` and `{` outside and inside strings, an upper bound. orjson
refuses documents nested past 1024 levels; such a body is read again with every array or object
opened deeper than TRUNCATED_DEPTH replaced by null, so a value nested that deep costs its span
(it is past MAX_VALUE_DEPTH long before) and the rest of the request is kept.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import orjson
from turnwatch.collector.otlp_common import (
    MAX_VALUE_DEPTH,
    DecodeLimits,
    DecodeResult,
    ItemRejected,
    TooLarge,
    Undecodable,
    ViewT,
    check_id,
)
from turnwatch.collector.records import LogView, SpanEvent, SpanView


def _field(obj: dict[str, Any], camel: str, snake: str, default: Any = None) -> Any:
    value = obj.get(camel)
    if value is None:
        value = obj.get(snake, default)
    return value


def _list(obj: dict[str, Any], camel: str, snake: str) -> list[Any]:
    value = _field(obj, camel, snake)
    if value is None:
        return []
    if not isinstance(value, list):
        raise ItemRejected("malformed")
    return value


def _object(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ItemRejected("malformed")
    return value


INT32 = (-(2**31), 2**31 - 1)
UINT32 = (0, 2**32 - 1)
INT64 = (-(2**63), 2**63 - 1)
UINT64 = (0, 2**64 - 1)


def _int(value: Any, bounds: tuple[int, int] = INT64) -> int:
    """An OTLP integer field; JSON carries any magnitude, so enforce the proto field's range.

    Unbounded values are not harmless: a 30-digit `startTimeUnixNano` later overflows datetime
    when the session closes, inside the sweeper task, far from the request that carried it.
    """
    if value is None:
        return 0
    if isinstance(value, bool):
        raise ItemRejected("malformed")
    if isinstance(value, int):
        number = value
    elif isinstance(value, str):
        try:
            number = int(value)
        except ValueError:
            raise ItemRejected("malformed") from None
    elif isinstance(value, float) and value.is_integer():
        number = int(value)
    else:
        raise ItemRejected("malformed")
    low, high = bounds
    if not low <= number <= high:
        raise ItemRejected("malformed")
    return number


def _hex_id(value: Any, length: int, *, required: bool) -> str:
    if value is None:
        value = ""
    if not isinstance(value, str):
        raise ItemRejected("invalid_id")
    return check_id(value, length, required=required)


def _any_value(value: Any, limits: DecodeLimits, depth: int) -> Any:
    if value is None:
        return None
    value = _object(value)
    if "stringValue" in value or "string_value" in value:
        return _bounded_text(_field(value, "stringValue", "string_value"), limits)
    if "intValue" in value or "int_value" in value:
        return _int(_field(value, "intValue", "int_value"))
    if "boolValue" in value or "bool_value" in value:
        flag = _field(value, "boolValue", "bool_value")
        if not isinstance(flag, bool):
            raise ItemRejected("malformed")
        return flag
    if "doubleValue" in value or "double_value" in value:
        number = _field(value, "doubleValue", "double_value")
        if isinstance(number, bool) or not isinstance(number, int | float | str):
            raise ItemRejected("malformed")
        try:
            return float(number)
        except ValueError:
            raise ItemRejected("malformed") from None
    if depth >= MAX_VALUE_DEPTH:
        raise ItemRejected("attribute_too_deep")
    if "arrayValue" in value or "array_value" in value:
        array = _object(_field(value, "arrayValue", "array_value"))
        return [_any_value(item, limits, depth + 1) for item in _list(array, "values", "values")]
    if "kvlistValue" in value or "kvlist_value" in value:
        kvlist = _object(_field(value, "kvlistValue", "kvlist_value"))
        return _attributes(_list(kvlist, "values", "values"), limits, depth + 1)
    if "bytesValue" in value or "bytes_value" in value:
        return _bounded_text(_field(value, "bytesValue", "bytes_value"), limits)  # base64 text
    return None


def _bounded_text(text: Any, limits: DecodeLimits) -> str:
    if not isinstance(text, str):
        raise ItemRejected("malformed")
    if len(text) > limits.max_attribute_bytes:
        raise ItemRejected("attribute_too_large")
    return text


def _attributes(pairs: list[Any], limits: DecodeLimits, depth: int = 0) -> dict[str, Any]:
    attributes: dict[str, Any] = {}
    for pair in pairs:
        pair = _object(pair)
        key = pair.get("key")
        if not isinstance(key, str):
            raise ItemRejected("malformed")
        attributes[key] = _any_value(pair.get("value"), limits, depth)
    return attributes


TRUNCATED_DEPTH = 256
_NOT_COUNTED = bytes(byte for byte in range(256) if byte not in b",[{")
_STRUCTURE = re.compile(rb'["\[\]{}]')
_STRING_REST = re.compile(rb'[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)


def _count_values(body: bytes, limits: DecodeLimits) -> None:
    if len(body) // 2 + 1 <= limits.max_values:
        return  # cannot hold more
    values = len(body.translate(None, _NOT_COUNTED)) + 1
    if values > limits.max_values:
        raise TooLarge("too_many_values", f"more than {limits.max_values} values in one request")


def _truncated(body: bytes, depth: int) -> bytes:
    """`body` with every array or object opened deeper than `depth` replaced by null."""
    pieces: list[bytes] = []
    level = kept_until = 0
    cut_at = -1
    position = 0
    while (found := _STRUCTURE.search(body, position)) is not None:
        at = found.start()
        char = body[at]
        if char == 0x22:  # a string: skip it whole, brackets inside are text
            rest = _STRING_REST.match(body, at + 1)
            if rest is None:
                break  # unterminated: orjson says so below
            position = rest.end()
            continue
        position = at + 1
        if char in b"[{":
            level += 1
            if level == depth + 1:
                cut_at = at
        else:
            if level == depth + 1 and cut_at >= 0:
                pieces += [body[kept_until:cut_at], b"null"]
                kept_until, cut_at = position, -1
            level -= 1
    pieces.append(body[kept_until:])
    return b"".join(pieces)


def _parse(body: bytes) -> Any:
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        if "depth" not in str(exc):
            raise Undecodable("body is not valid JSON") from exc
    try:
        return orjson.loads(_truncated(body, TRUNCATED_DEPTH))
    except orjson.JSONDecodeError as exc:
        raise Undecodable("body is not valid JSON") from exc


def _load(body: bytes, limits: DecodeLimits, top_key: str, top_snake: str) -> list[Any]:
    _count_values(body, limits)
    document = _parse(body)
    if not isinstance(document, dict):
        raise Undecodable("body is not an OTLP/JSON object")
    resources = _field(document, top_key, top_snake, [])
    if not isinstance(resources, list):
        raise Undecodable(f"{top_key} is not a list")
    return resources


def _resource(block: dict[str, Any], limits: DecodeLimits) -> dict[str, Any]:
    resource = block.get("resource") or {}
    try:
        return _attributes(_list(_object(resource), "attributes", "attributes"), limits)
    except ItemRejected:
        return {}


def _scope_name(block: dict[str, Any]) -> str:
    scope = block.get("scope")
    if isinstance(scope, dict) and isinstance(scope.get("name"), str):
        return scope["name"]
    return ""


def _span(span: Any, resource: dict[str, Any], scope: str, limits: DecodeLimits) -> SpanView:
    span = _object(span)
    status = span.get("status") or {}
    if not isinstance(status, dict):
        raise ItemRejected("malformed")
    events = []
    for event in _list(span, "events", "events"):
        event = _object(event)
        events.append(
            SpanEvent(
                name=str(event.get("name") or ""),
                time_ns=_int(_field(event, "timeUnixNano", "time_unix_nano"), UINT64),
                attributes=_attributes(_list(event, "attributes", "attributes"), limits),
            )
        )
    name = span.get("name") or ""
    if not isinstance(name, str):
        raise ItemRejected("malformed")
    return SpanView(
        trace_id=_hex_id(_field(span, "traceId", "trace_id"), 32, required=True),
        span_id=_hex_id(_field(span, "spanId", "span_id"), 16, required=True),
        parent_span_id=_hex_id(_field(span, "parentSpanId", "parent_span_id"), 16, required=False),
        name=name,
        kind=_int(span.get("kind"), INT32),
        start_ns=_int(_field(span, "startTimeUnixNano", "start_time_unix_nano"), UINT64),
        end_ns=_int(_field(span, "endTimeUnixNano", "end_time_unix_nano"), UINT64),
        attributes=_attributes(_list(span, "attributes", "attributes"), limits),
        events=events,
        status_code=_int(status.get("code"), INT32),
        resource=resource,
        scope_name=scope,
        dropped_attributes=_int(
            _field(span, "droppedAttributesCount", "dropped_attributes_count"), UINT32
        ),
    )


ItemBuilder = Callable[[Any, dict[str, Any], str, DecodeLimits], ViewT]


def _decode(
    body: bytes,
    limits: DecodeLimits,
    keys: tuple[tuple[str, str], tuple[str, str], tuple[str, str]],
    build: ItemBuilder[ViewT],
) -> DecodeResult[ViewT]:
    """Walk resource -> scope -> item blocks; a malformed block costs itself, not the request."""
    (resource_key, scope_key, item_key) = keys
    result: DecodeResult[ViewT] = DecodeResult()
    blocks = _load(body, limits, *resource_key)
    _count_items(blocks, keys, limits.max_items, item_key[1])
    for block in blocks:
        try:
            block = _object(block)
            resource = _resource(block, limits)
            scopes = _list(block, *scope_key)
        except ItemRejected as rejection:
            result.reject(rejection.reason)
            continue
        for scope_block in scopes:
            try:
                scope_block = _object(scope_block)
                items = _list(scope_block, *item_key)
            except ItemRejected as rejection:
                result.reject(rejection.reason)
                continue
            scope = _scope_name(scope_block)
            for item in items:
                try:
                    result.items.append(build(item, resource, scope, limits))
                except ItemRejected as rejection:
                    result.reject(rejection.reason)
    return result


def _count_items(
    blocks: list[Any],
    keys: tuple[tuple[str, str], tuple[str, str], tuple[str, str]],
    max_items: int,
    name: str,
) -> None:
    """TooLarge past `max_items` spans or log records, before any is mapped."""
    items = 0
    for block in blocks:
        scopes = _field(block, *keys[1]) if isinstance(block, dict) else None
        for scope_block in scopes if isinstance(scopes, list) else ():
            found = _field(scope_block, *keys[2]) if isinstance(scope_block, dict) else None
            items += len(found) if isinstance(found, list) else 0
    if items > max_items:
        label = "spans" if name == "spans" else "log_records"
        raise TooLarge(
            f"too_many_{label}", f"more than {max_items} {label.replace('_', ' ')} in one request"
        )


TRACE_KEYS = (
    ("resourceSpans", "resource_spans"),
    ("scopeSpans", "scope_spans"),
    ("spans", "spans"),
)
LOG_KEYS = (
    ("resourceLogs", "resource_logs"),
    ("scopeLogs", "scope_logs"),
    ("logRecords", "log_records"),
)


def decode_traces(body: bytes, limits: DecodeLimits) -> DecodeResult[SpanView]:
    return _decode(body, limits, TRACE_KEYS, _span)


def _log(record: Any, resource: dict[str, Any], scope: str, limits: DecodeLimits) -> LogView:
    record = _object(record)
    event_name = _field(record, "eventName", "event_name", "")
    if not isinstance(event_name, str):
        raise ItemRejected("malformed")
    time_ns = _int(_field(record, "timeUnixNano", "time_unix_nano"), UINT64) or _int(
        _field(record, "observedTimeUnixNano", "observed_time_unix_nano"), UINT64
    )
    return LogView(
        time_ns=time_ns,
        trace_id=_hex_id(_field(record, "traceId", "trace_id"), 32, required=False),
        span_id=_hex_id(_field(record, "spanId", "span_id"), 16, required=False),
        event_name=event_name,
        body=_any_value(record.get("body"), limits, 0),
        attributes=_attributes(_list(record, "attributes", "attributes"), limits),
        resource=resource,
        scope_name=scope,
        dropped_attributes=_int(
            _field(record, "droppedAttributesCount", "dropped_attributes_count"), UINT32
        ),
    )


def decode_logs(body: bytes, limits: DecodeLimits) -> DecodeResult[LogView]:
    return _decode(body, limits, LOG_KEYS, _log)
