"""OTLP protobuf requests (HTTP `application/x-protobuf` and gRPC) into span and log views.

A request is split into its blocks and items on the wire first (otlp_wire.py: refused past
`max_items` before anything is allocated), then parsed a piece at a time: its resources and
scopes each on their own, runs of adjacent spans of up to RUN_BYTES in one upb call, a span past
LARGE_ITEM_BYTES alone and only after its values were counted on the wire (two bytes can be an
event). upb's memory is then one run's at a time, not the whole request's, what each span holds
is taken from the request's `max_values` before the next is parsed, and upb's recursion limit
applies within a piece: a value nested deeper than it rejects its span, not the request.

Spans, the bulk of the traffic, are parsed into RawSpan, a runtime-built twin of Span whose
attributes (and its events') are `bytes`: upb then hands each KeyValue back as one bytes object
instead of KeyValue + AnyValue wrappers (creating those was over half the cost of decoding a
span), and otlp_values.raw_attributes reads them. The stock path, `trace_request_to_views`, is
the reference the fast one is tested against (tests/test_otlp_fast_decode.py): same items, same
rejection reasons, same 400s, but for links, which no dialect reads and which are not checked.
Log records, fewer, are parsed one at a time with the stock LogRecord.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1 import common_pb2
from opentelemetry.proto.common.v1.common_pb2 import InstrumentationScope
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord
from opentelemetry.proto.resource.v1 import resource_pb2
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1 import trace_pb2
from turnwatch.collector.otlp_common import (
    DecodeLimits,
    DecodeResult,
    ItemRejected,
    Undecodable,
)
from turnwatch.collector.otlp_values import (
    UNDECODABLE,
    any_value,
    attributes,
    check_raw_attributes,
    raw_attributes,
)
from turnwatch.collector.otlp_wire import (
    LOG_RECORD,
    LOG_RECORD_VALUES,
    RESOURCE,
    SCOPE,
    SPAN_VALUES,
    ResourceBlock,
    count_values,
    fields,
    nested_too_deep,
    split_request,
)
from turnwatch.collector.records import LogView, SpanEvent, SpanView
from turnwatch.collector.run_bytes import (
    EMPTY_TEXT_FIELD,
    KNOWN_RUNS,
    TEXT_HEAD,
    TEXT_KEY,
    locate,
    next_run,
    region,
    resent_text,
    run_key,
)

LARGE_ITEM_BYTES = 64 * 1024
"""An item longer than this that could hold more values than the request has left (two bytes
a value) has them counted before it is parsed: upb can spend about thirty bytes of memory per
byte of a tiny-event encoding, so an item this size costs at most a couple of MiB before its
count is known. One that cannot is parsed, then counted as a small item is (its links, which
the twin leaves unparsed, are not counted)."""
RUN_BYTES = 256 * 1024
"""Adjacent small spans are parsed together up to this many bytes (one upb call for many)."""
RESENT_SPAN_BYTES = 8 * 1024
"""A span longer than this is parsed alone, after looking for resent history in its bytes
(message_runs.py): below it, a history is too short for recognising it to pay."""

ReadAttributes = Callable[[Any, DecodeLimits], dict[str, Any]]


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


def _span_view(
    span: Any,
    resource: dict[str, Any],
    scope_name: str,
    limits: DecodeLimits,
    read_attributes: ReadAttributes = attributes,
    messages: dict[str, list[bytes]] | None = None,
) -> SpanView:
    """With `messages` (the raw path), the span's message attributes are left undecoded there."""
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
        read_attributes(span.attributes, limits)
        if messages is None
        else raw_attributes(span.attributes, limits, messages),
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
        {} if messages is None else messages,
    )


# --- The reference: a request parsed whole with the stock classes ------------------------------


def _resource_attributes(pairs: Any, limits: DecodeLimits) -> dict[str, Any]:
    try:
        return attributes(pairs, limits)
    except ItemRejected:
        return {}


def trace_request_to_views(
    request: ExportTraceServiceRequest, limits: DecodeLimits
) -> DecodeResult[SpanView]:
    limits = limits.for_request()
    result: DecodeResult[SpanView] = DecodeResult()
    for block in request.resource_spans:
        resource = _resource_attributes(block.resource.attributes, limits)
        for scope_block in block.scope_spans:
            scope_name = scope_block.scope.name
            for span in scope_block.spans:
                try:
                    result.items.append(_span_view(span, resource, scope_name, limits))
                except ItemRejected as rejection:
                    result.reject(rejection.reason)
    return result


# --- The receivers' path ------------------------------------------------------------------------


def _raw_span_classes() -> tuple[Any, Any]:
    """Span's twin, and a list of them (a run of ScopeSpans.spans fields, parsed in one go).

    In the twin, Span.attributes and Event.attributes are `bytes`: the same wire format, but upb
    hands each KeyValue back as one bytes object (no KeyValue/AnyValue wrappers) and leaves its
    UTF-8 check to the caller's decode. Span.status stays a message: a singular message sent
    twice is merged by protobuf, which bytes are not. Span.links is left out: no dialect reads
    links, and upb keeps them as unknown bytes without building (or checking) them."""
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
        if message.name == "Span":
            kept = [field for field in message.field if field.name != "links"]
            del message.field[:]
            message.field.extend(kept)
    span_list = proto.message_type.add(name="SpanList")
    span_list.field.add(
        name="spans",
        number=2,  # as in ScopeSpans
        type=field_type.TYPE_MESSAGE,
        label=field_type.LABEL_REPEATED,
        type_name=f".{package}.Span",
    )
    pool.Add(proto)
    span, spans = (
        message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{package}.{name}"))
        for name in ("Span", "SpanList")
    )
    return span, spans


RawSpan, RawSpanList = _raw_span_classes()


def _parse(message_class: Any, data: Any, kind: int | None) -> Any:
    """One message of the request; with the `kind` it has in otlp_wire, a value nested too deep
    to parse is ItemRejected."""
    try:
        return message_class.FromString(data)
    except (DecodeError, RecursionError, ValueError) as exc:
        if kind is not None and nested_too_deep(bytes(data), kind):
            raise ItemRejected("attribute_too_deep") from None
        raise Undecodable(UNDECODABLE) from exc


def _joined(view: Any, parts: list[tuple[int, int]]) -> Any:
    """A singular field sent several times is the merge of its parts, as protobuf reads it."""
    if len(parts) == 1:
        return view[parts[0][0] : parts[0][1]]
    return b"".join([view[start:end] for start, end in parts])


def _check_text(view: Any, parts: list[tuple[int, int]]) -> None:
    for start, end in parts:
        try:
            bytes(view[start:end]).decode()
        except UnicodeDecodeError as exc:
            raise Undecodable(UNDECODABLE) from exc


def _resource(view: Any, block: ResourceBlock, limits: DecodeLimits) -> dict[str, Any]:
    _check_text(view, block.schema_urls)
    if not block.resource:
        return {}
    try:
        resource = _parse(Resource, _joined(view, block.resource), RESOURCE)
    except ItemRejected:
        return {}  # as for a resource attribute rejected for its size or depth
    pairs = resource.attributes
    limits.take(len(pairs))
    return _resource_attributes(pairs, limits)


def _scope_name(view: Any, parts: list[tuple[int, int]], limits: DecodeLimits) -> str:
    if not parts:
        return ""
    data = _joined(view, parts)
    try:
        scope = _parse(InstrumentationScope, data, SCOPE)
    except ItemRejected:
        # Attributes too deep to parse; only the name is used, and it is the last one sent.
        data = bytes(data)
        names = fields(data, 0, len(data), frozenset({1}))
        _check_text(data, [(start, end) for _, start, end in names])
        return bytes(data[names[-1][1] : names[-1][2]]).decode() if names else ""
    limits.take(len(scope.attributes))
    return scope.name


def _span_values(span: SpanView) -> int:
    count = 1 + len(span.attributes) + len(span.events)
    for raws in span.message_attributes.values():
        count += len(raws)
    if span.resent_run is not None and span.resent_run.head != TEXT_HEAD:  # a text is one value
        count += span.resent_run.items.count
    for event in span.events:
        count += len(event.attributes)
    return count


def _alone(body: bytes, view: Any, start: int, end: int, limits: DecodeLimits) -> tuple[Any, Any]:
    """A span parsed on its own, less the run of resent input it begins its input with."""
    key = (0, 0, 0)
    try:
        position, head = locate(body, start, end)
        run_start, run_end, replaced_end = region(body, position, end, head)
        if run_start >= 0:
            key = run_key(body, run_start, run_end, head, limits.max_attribute_bytes)
    except Undecodable:
        run_start = -1  # upb tells what is wrong with it
    if run_start < 0:
        return _parse(RawSpan, view[start:end], None), None
    known = KNOWN_RUNS.find(body, run_start, run_end, key) if key[1] else None
    if known is None:
        data = view[start:end]
    elif head == TEXT_HEAD:  # the text's attribute, as the empty string (resent_text: the rest)
        data = b"".join([view[start:position], EMPTY_TEXT_FIELD, view[replaced_end:end]])
    else:
        data = b"".join([view[start:position], view[position + known.size : end]])
    return _parse(RawSpan, data, None), (run_start, run_end, head, known, key)


def _raw_spans(
    body: bytes, view: Any, items: list[tuple[int, int, int]], limits: DecodeLimits
) -> Iterator[tuple[Any, bool, Any]]:
    """The parsed spans of one scope block, a run of adjacent small ones per upb call, each
    with what `_alone` found in it (None: parsed whole)."""
    first = 0
    while first < len(items):
        field_start, start, end = items[first]
        if end - start > RESENT_SPAN_BYTES:
            # Each value counted takes at least two bytes (its tag and its length), so an item
            # whose bytes cannot reach the budget is parsed first and counted as a small one is:
            # counting on the wire is then only for items that could pass it.
            counted = end - start > LARGE_ITEM_BYTES and 1 + (end - start) // 2 > limits.values_left
            if counted:
                limits.take(count_values(body, start, end, SPAN_VALUES, limits.values_left))
            span, found = _alone(body, view, start, end, limits)
            yield span, not counted, found
            first += 1
            continue
        last = first + 1
        while (
            last < len(items)
            and items[last][0] == end
            and items[last][2] - field_start <= RUN_BYTES
            and items[last][2] - items[last][1] <= RESENT_SPAN_BYTES
        ):
            end = items[last][2]
            last += 1
        for span in _parse(RawSpanList, view[field_start:end], None).spans[:]:
            yield span, True, None
        first = last


def _scope_blocks(
    body: bytes, view: Any, limits: DecodeLimits, item_name: str
) -> Iterator[tuple[dict[str, Any], str, list[tuple[int, int, int]]]]:
    """(resource attributes, scope name, items) of each scope block of the request."""
    for block in split_request(body, limits.max_items, item_name):
        resource = _resource(view, block, limits)
        for scope_block in block.scopes:
            _check_text(view, scope_block.schema_urls)
            yield resource, _scope_name(view, scope_block.scope, limits), scope_block.items


def decode_traces(body: bytes, limits: DecodeLimits) -> DecodeResult[SpanView]:
    limits = limits.for_request()
    view = memoryview(body)
    result: DecodeResult[SpanView] = DecodeResult()
    for resource, scope, items in _scope_blocks(body, view, limits, "spans"):
        for span, uncounted, found in _raw_spans(body, view, items, limits):
            known = found[3] if found is not None else None
            text_known = known is not None and found[2] == TEXT_HEAD
            # What the span adds to a known run; the run's own encodings are not copied here.
            messages: dict[str, list[bytes]] = {}
            if known is not None and not text_known:
                messages[found[2].decode()] = []
            try:
                converted = _span_view(span, resource, scope, limits, raw_attributes, messages)
                if known is not None and text_known:
                    converted.attributes[TEXT_KEY] = resent_text(
                        body, found[0], found[1], known, limits.max_attribute_bytes
                    )
            except ItemRejected as rejection:
                # Reading stopped at the rejection: what it left unread must still decode.
                check_raw_attributes(span.attributes)
                for event in span.events:
                    check_raw_attributes(event.attributes)
                result.reject(rejection.reason)
                continue
            converted.resent_run = known
            if uncounted:
                limits.take(_span_values(converted))
            if found is not None:
                converted.message_run = next_run(body, found, converted)
            result.items.append(converted)
    return result


def _log_view(
    record: Any, resource: dict[str, Any], scope_name: str, limits: DecodeLimits
) -> LogView:
    return LogView(
        time_ns=record.time_unix_nano or record.observed_time_unix_nano,
        trace_id=_id(record.trace_id, 16, required=False),
        span_id=_id(record.span_id, 8, required=False),
        event_name=record.event_name,
        body=any_value(record.body, limits, 0) if record.HasField("body") else None,
        attributes=attributes(record.attributes, limits),
        resource=resource,
        scope_name=scope_name,
        dropped_attributes=record.dropped_attributes_count,
    )


def _record_values(record: Any) -> int:
    return 1 + len(record.attributes) + (1 if record.HasField("body") else 0)


def decode_logs(body: bytes, limits: DecodeLimits) -> DecodeResult[LogView]:
    limits = limits.for_request()
    view = memoryview(body)
    result: DecodeResult[LogView] = DecodeResult()
    for resource, scope, items in _scope_blocks(body, view, limits, "log_records"):
        for _, start, end in items:
            try:
                large = end - start > LARGE_ITEM_BYTES
                if large:
                    left = limits.values_left
                    limits.take(count_values(body, start, end, LOG_RECORD_VALUES, left))
                record = _parse(LogRecord, view[start:end], LOG_RECORD)
                if not large:
                    limits.take(_record_values(record))
                result.items.append(_log_view(record, resource, scope, limits))
            except ItemRejected as rejection:
                result.reject(rejection.reason)
    return result
