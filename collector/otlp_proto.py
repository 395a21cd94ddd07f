"""OTLP protobuf requests (HTTP `application/x-protobuf` and gRPC) into span and log views."""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

from collector.otlp_common import (
    MAX_VALUE_DEPTH,
    DecodeLimits,
    DecodeResult,
    ItemRejected,
    Undecodable,
    ViewT,
)
from collector.records import LogView, SpanEvent, SpanView


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
    if len(raw) != length:
        if raw or required:
            raise ItemRejected("invalid_id" if raw else "missing_id")
        return ""
    if raw.count(0) == length:
        if required:
            raise ItemRejected("invalid_id")
        return ""
    return raw.hex()


def _resource_attributes(pairs: list[KeyValue], limits: DecodeLimits) -> dict[str, Any]:
    try:
        return _attributes(pairs, limits)
    except ItemRejected:
        return {}


def decode_traces(body: bytes, limits: DecodeLimits) -> DecodeResult[SpanView]:
    request = ExportTraceServiceRequest()
    try:
        request.ParseFromString(body)
    except (DecodeError, RecursionError, ValueError) as exc:
        raise Undecodable("body is not an ExportTraceServiceRequest") from exc
    return trace_request_to_views(request, limits)


def _views(
    resources: Any,
    scopes_field: str,
    items_field: str,
    build: Callable[[Any, dict[str, Any], str, DecodeLimits], ViewT],
    limits: DecodeLimits,
) -> DecodeResult[ViewT]:
    """Walk resource -> scope -> items; a rejected item costs itself, not the request."""
    result: DecodeResult[ViewT] = DecodeResult()
    for block in resources:
        resource = _resource_attributes(block.resource.attributes, limits)
        for scope_block in getattr(block, scopes_field):
            scope_name = scope_block.scope.name
            for item in getattr(scope_block, items_field):
                try:
                    result.items.append(build(item, resource, scope_name, limits))
                except ItemRejected as rejection:
                    result.reject(rejection.reason)
    return result


def _span_view(
    span: Any, resource: dict[str, Any], scope_name: str, limits: DecodeLimits
) -> SpanView:
    return SpanView(
        trace_id=_id(span.trace_id, 16, required=True),
        span_id=_id(span.span_id, 8, required=True),
        parent_span_id=_id(span.parent_span_id, 8, required=False),
        name=span.name,
        kind=span.kind,
        start_ns=span.start_time_unix_nano,
        end_ns=span.end_time_unix_nano,
        attributes=_attributes(span.attributes, limits),
        events=[
            SpanEvent(
                name=event.name,
                time_ns=event.time_unix_nano,
                attributes=_attributes(event.attributes, limits),
            )
            for event in span.events
        ]
        if span.events
        else [],
        status_code=span.status.code,
        resource=resource,
        scope_name=scope_name,
        dropped_attributes=span.dropped_attributes_count,
    )


def trace_request_to_views(
    request: ExportTraceServiceRequest, limits: DecodeLimits
) -> DecodeResult[SpanView]:
    return _views(request.resource_spans, "scope_spans", "spans", _span_view, limits)


def decode_logs(body: bytes, limits: DecodeLimits) -> DecodeResult[LogView]:
    request = ExportLogsServiceRequest()
    try:
        request.ParseFromString(body)
    except (DecodeError, RecursionError, ValueError) as exc:
        raise Undecodable("body is not an ExportLogsServiceRequest") from exc
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
