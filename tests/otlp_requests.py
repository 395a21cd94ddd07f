"""Hand-built OTLP requests (protobuf and OTLP/JSON) for the error-contract and fuzz tests."""

from __future__ import annotations

import base64
import hashlib
import json
import socket
import time
from typing import Any

import httpx
from google.protobuf import json_format
from google.protobuf.message import Message
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, ArrayValue, KeyValue, KeyValueList
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord, ResourceLogs, ScopeLogs
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span
from prometheus_client.parser import text_string_to_metric_families

PROTOBUF = "application/x-protobuf"
JSON = "application/json"
ID_FIELDS = frozenset({"traceId", "spanId", "parentSpanId"})


def any_value(value: Any) -> AnyValue:
    if isinstance(value, bool):
        return AnyValue(bool_value=value)
    if isinstance(value, int):
        return AnyValue(int_value=value)
    if isinstance(value, float):
        return AnyValue(double_value=value)
    if isinstance(value, str):
        return AnyValue(string_value=value)
    if isinstance(value, bytes):
        return AnyValue(bytes_value=value)
    if isinstance(value, list):
        return AnyValue(array_value=ArrayValue(values=[any_value(item) for item in value]))
    if isinstance(value, dict):
        pairs = [KeyValue(key=key, value=any_value(item)) for key, item in value.items()]
        return AnyValue(kvlist_value=KeyValueList(values=pairs))
    raise TypeError(f"no AnyValue for {type(value).__name__}")


def key_values(attributes: dict[str, Any]) -> list[KeyValue]:
    return [KeyValue(key=key, value=any_value(value)) for key, value in attributes.items()]


def trace_id_for(conversation: str) -> bytes:
    return hashlib.sha256(f"trace:{conversation}".encode()).digest()[:16]


def span_id_for(conversation: str, number: int) -> bytes:
    return hashlib.sha256(f"span:{conversation}:{number}".encode()).digest()[:8]


def chat_attributes(conversation: str, number: int = 0) -> dict[str, Any]:
    """A GenAI v1.37+ chat span's attributes: one user question, one assistant answer."""
    question = [{"role": "user", "parts": [{"type": "text", "content": f"question {number}"}]}]
    answer = [
        {
            "role": "assistant",
            "parts": [{"type": "text", "content": f"answer {number}"}],
            "finish_reason": "stop",
        }
    ]
    return {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-4o-mini",
        "gen_ai.conversation.id": conversation,
        "gen_ai.input.messages": json.dumps(question),
        "gen_ai.output.messages": json.dumps(answer),
    }


def chat_span(
    conversation: str,
    number: int = 0,
    *,
    trace_id: bytes | None = None,
    span_id: bytes | None = None,
    extra: dict[str, Any] | None = None,
) -> Span:
    start = time.time_ns()
    attributes = chat_attributes(conversation, number) | (extra or {})
    return Span(
        trace_id=trace_id_for(conversation) if trace_id is None else trace_id,
        span_id=span_id_for(conversation, number) if span_id is None else span_id,
        name="chat gpt-4o-mini",
        kind=Span.SPAN_KIND_CLIENT,
        start_time_unix_nano=start,
        end_time_unix_nano=start + 1_000_000,
        attributes=key_values(attributes),
    )


DEFAULT_SERVICE = "errors-bot"
"""The service requests name unless told otherwise (session ids are scoped by it)."""


def trace_request(spans: list[Span], service: str = DEFAULT_SERVICE) -> ExportTraceServiceRequest:
    return ExportTraceServiceRequest(
        resource_spans=[
            ResourceSpans(
                resource=Resource(attributes=key_values({"service.name": service})),
                scope_spans=[ScopeSpans(spans=spans)],
            )
        ]
    )


def logs_request(
    records: list[LogRecord], service: str = DEFAULT_SERVICE
) -> ExportLogsServiceRequest:
    return ExportLogsServiceRequest(
        resource_logs=[
            ResourceLogs(
                resource=Resource(attributes=key_values({"service.name": service})),
                scope_logs=[ScopeLogs(log_records=records)],
            )
        ]
    )


def _hex_ids(node: Any) -> Any:
    if isinstance(node, dict):
        return {
            key: base64.b64decode(value).hex() if key in ID_FIELDS else _hex_ids(value)
            for key, value in node.items()
        }
    if isinstance(node, list):
        return [_hex_ids(item) for item in node]
    return node


def otlp_json(message: Message) -> bytes:
    """OTLP/JSON as the JavaScript exporter sends it: camelCase, hex ids, int64 as strings."""
    return json.dumps(
        _hex_ids(json_format.MessageToDict(message, use_integers_for_enums=True))
    ).encode()


def encode(message: Message, media_type: str) -> bytes:
    return message.SerializeToString() if media_type == PROTOBUF else otlp_json(message)


def _varint(number: int) -> bytes:
    out = bytearray()
    while True:
        byte, number = number & 0x7F, number >> 7
        out.append(byte | (0x80 if number else 0))
        if not number:
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    """A length-delimited protobuf field (wire type 2)."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def deep_value(depth: int, shape: str = "array") -> bytes:
    """An AnyValue encoding nested `depth` arrays (or kvlists) deep around a string.

    Built byte by byte: upb refuses to build (or copy) messages nested past 100 levels, which is
    exactly what hostile clients send.
    """
    value = _field(1, b"leaf")  # AnyValue.string_value
    for _ in range(depth):
        if shape == "array":
            value = _field(5, _field(1, value))  # AnyValue.array_value -> ArrayValue.values
        else:  # AnyValue.kvlist_value -> KeyValueList.values -> KeyValue{key, value}
            value = _field(6, _field(1, _field(1, b"k") + _field(2, value)))
    return value


def deep_span(span: Span, depth: int, shape: str = "array") -> bytes:
    """`span` encoded with one more attribute, nested `depth` levels deep."""
    attribute = _field(1, b"deep") + _field(2, deep_value(depth, shape))  # KeyValue{key, value}
    return span.SerializeToString() + _field(9, attribute)  # Span.attributes (repeated)


def spans_request(*spans: bytes) -> bytes:
    """An ExportTraceServiceRequest of one resource and scope holding these span encodings."""
    return _field(1, _field(2, b"".join(_field(2, span) for span in spans)))


def deep_attribute_request(span: Span, depth: int) -> bytes:
    """A trace request whose span carries an attribute nested `depth` arrays deep."""
    return spans_request(deep_span(span, depth))


def deep_json_value(depth: int, shape: str = "array") -> str:
    """OTLP/JSON of an AnyValue nested `depth` levels deep (as text: json.dumps recurses)."""
    opening, closing = (
        ('{"arrayValue": {"values": [', "]}}")
        if shape == "array"
        else ('{"kvlistValue": {"values": [{"key": "k", "value": ', "}]}}")
    )
    return opening * depth + '{"stringValue": "leaf"}' + closing * depth


# One client for the requests tests send: a new httpx client builds a TLS context (loading the CA
# bundle) even for plain http://, about 60 ms, which was most of a loopback request's time.
LOOPBACK = httpx.Client(timeout=30)


def closed_by_server(sock: socket.socket) -> bool:
    """Reads until the server closes the connection (True) or the socket's timeout passes."""
    try:
        while sock.recv(65536):
            pass
    except TimeoutError:
        return False
    except ConnectionResetError:
        pass
    return True


def metric_value(ops_url: str, name: str, **labels: str) -> float:
    """One sample from the running server's /metrics, parsed by prometheus_client (0 if absent)."""
    text = LOOPBACK.get(f"{ops_url}/metrics", timeout=10).text
    total = 0.0
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                total += sample.value
    return total
