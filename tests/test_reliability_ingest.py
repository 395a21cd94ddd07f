"""Issue 17's ingest cases against a real collector on loopback: each request reaches the real
receivers (uvicorn with turnwatch's connection limits, grpc) and the real decoders.

1  many-member gzip inflates in work linear in the body
2  caps on spans, log records and values per request (413 before parsing); decoding off the loop
8  connection cap (idle ones evicted first), header and body deadlines, a request concurrency cap
9  a value nested past the parsers' limits costs its span or record, not the request
10 refusals before the application (HTTP parser errors, a client gone mid-body, gRPC messages
   and metadata over the caps) are counted by reason and logged as a rate-limited warning
11 strict hex ids in OTLP/JSON

The 1,100-connection, 64 MiB and peak-memory cases need a `turnwatch serve` subprocess of their
own: tests/test_reliability_hostile.py.
"""

from __future__ import annotations

import contextlib
import gzip
import logging
import socket
import threading
import uuid
import zlib
from collections.abc import Iterator

import grpc
import httpx
import orjson
import pytest
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord
from turnwatch.collector import otlp_grpc, otlp_proto
from turnwatch.collector.body import decompress

from tests.conftest import Running, make_settings, settled, start_service
from tests.otlp_requests import (
    JSON,
    LOOPBACK,
    PROTOBUF,
    _field,
    any_value,
    chat_span,
    closed_by_server,
    deep_json_value,
    deep_span,
    deep_value,
    encode,
    key_values,
    logs_request,
    metric_value,
    otlp_json,
    spans_request,
    trace_request,
)
from tests.waiting import eventually

REJECTED = "turnwatch_otlp_requests_rejected_total"
IDLE = {"sessions.idle_timeout_seconds": 0.1}
TRACES = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"


def conversation() -> str:
    return f"conv-{uuid.uuid4().hex[:12]}"


def rejected(running: Running, reason: str, transport: str = "http") -> float:
    return metric_value(running.ops_url, REJECTED, transport=transport, reason=reason)


def post(running: Running, body: bytes, media_type: str = PROTOBUF, signal: str = "traces"):
    return LOOPBACK.post(
        f"{running.http_url}/v1/{signal}",
        content=body,
        headers={"Content-Type": media_type},
        timeout=30,
    )


@contextlib.contextmanager
def serving(**overrides: object) -> Iterator[Running]:
    handle = start_service(make_settings(**{**IDLE, **overrides}))
    try:
        yield handle
    finally:
        handle.background.stop()


@pytest.fixture(scope="module")
def server() -> Iterator[Running]:
    with serving() as handle:
        yield handle


@pytest.fixture(scope="module")
def capped() -> Iterator[Running]:
    caps = {
        "otlp.max_spans_per_request": 20,
        "otlp.max_log_records_per_request": 20,
        "otlp.max_values_per_request": 2_000,
    }
    with serving(**caps) as handle:
        yield handle


def raw_connection(running: Running) -> socket.socket:
    return socket.create_connection(("127.0.0.1", running.service.ports.otlp_http), timeout=10)


# --- 1: many-member gzip -----------------------------------------------------------------------


def test_many_member_gzip_is_inflated_in_work_linear_in_the_body(monkeypatch):
    """Each byte is handed to zlib a few times at most (a member's leftover starts the next):
    feeding each member the whole rest of the body was quadratic (8 MiB of members stalled the
    process for 100 s; here it fed zlib 250 MB for a 124 KiB body)."""
    members = 4_000
    body = b"".join(gzip.compress(b"member %d;" % n) for n in range(members))
    fed = 0
    real = zlib.decompressobj

    class CountingInflater:
        def __init__(self, wbits: int) -> None:
            self.inner = real(wbits)

        def decompress(self, data, max_length: int = 0) -> bytes:
            nonlocal fed
            fed += len(data)
            return self.inner.decompress(data, max_length)

        def __getattr__(self, name: str):
            return getattr(self.inner, name)

    monkeypatch.setattr(zlib, "decompressobj", CountingInflater)
    inflated = decompress(body, "gzip", 1 << 20)
    assert inflated == b"".join(b"member %d;" % n for n in range(members))
    assert fed <= 4 * len(body), f"{fed} bytes fed to zlib for a {len(body)}-byte body"


# --- 2: caps on what a request holds, decoding off the event loop ------------------------------


def spans_for(count: int) -> list:
    return [chat_span(conversation()) for _ in range(count)]


@pytest.mark.parametrize("media_type", [PROTOBUF, JSON])
def test_a_trace_request_past_max_spans_is_413_and_one_at_the_cap_is_taken(capped, media_type):
    before = rejected(capped, "too_many_spans")
    over = post(capped, encode(trace_request(spans_for(21)), media_type), media_type)
    assert over.status_code == 413
    assert "20 spans" in over.text
    assert rejected(capped, "too_many_spans") == before + 1
    at_cap = spans_for(20)
    assert post(capped, encode(trace_request(at_cap), media_type), media_type).status_code == 200
    assert settled(capped.ops_url).delivered >= 20


@pytest.mark.parametrize("media_type", [PROTOBUF, JSON])
def test_a_logs_request_past_max_log_records_is_413(capped, media_type):
    before = rejected(capped, "too_many_log_records")
    records = [LogRecord(event_name="gen_ai.user.message") for _ in range(21)]
    response = post(capped, encode(logs_request(records), media_type), media_type, "logs")
    assert response.status_code == 413
    assert rejected(capped, "too_many_log_records") == before + 1
    fine = post(capped, encode(logs_request(records[:20]), media_type), media_type, "logs")
    assert fine.status_code == 200


@pytest.mark.parametrize("media_type", [PROTOBUF, JSON])
def test_a_request_past_max_values_is_413(capped, media_type):
    """Attributes cost memory as spans do: 2,100 on one span pass a cap of 2,000 values."""
    crowded = chat_span(conversation(), extra={f"a{n}": n for n in range(2_100)})
    before = rejected(capped, "too_many_values")
    response = post(capped, encode(trace_request([crowded]), media_type), media_type)
    assert response.status_code == 413
    assert rejected(capped, "too_many_values") == before + 1


def test_array_elements_and_events_count_as_values(capped):
    listed = chat_span(conversation(), extra={"list": list(range(2_100))})
    assert post(capped, encode(trace_request([listed]), PROTOBUF)).status_code == 413
    # Two bytes each on the wire: a span (long enough to be counted before it is parsed) of
    # 40,000 empty events, and a short one of 2,100.
    for events in (40_000, 2_100):
        span = chat_span(conversation()).SerializeToString() + b"\x5a\x00" * events
        assert post(capped, spans_request(span)).status_code == 413
    assert post(capped, encode(trace_request(spans_for(1)), PROTOBUF)).status_code == 200


def test_decoding_runs_off_the_event_loop(monkeypatch):
    """The decoder waits for a callback only the server's running event loop can run: on the
    loop it would wait for itself, give up and fail the request."""
    decoding, loop_ran = threading.Event(), threading.Event()
    original = otlp_proto.decode_traces

    def waits_for_the_loop(body, limits):
        decoding.set()
        if not loop_ran.wait(10):
            raise ValueError("the event loop did not run while the request was decoded")
        return original(body, limits)

    monkeypatch.setattr(otlp_proto, "decode_traces", waits_for_the_loop)
    monkeypatch.setattr(otlp_grpc, "decode_traces", waits_for_the_loop)
    with serving() as handle:
        for send in (_send_http, _send_grpc):
            decoding.clear()
            loop_ran.clear()
            key = conversation()
            answer: list[bool] = []
            sender = threading.Thread(target=_append, args=(answer, send, handle, key))
            sender.start()
            assert decoding.wait(10)
            handle.background.call(loop_ran.set)  # runs only if the loop is free
            sender.join(20)
            assert answer == [True]
            assert handle.sink.session_for(key).turns


def _append(answers: list[bool], send, running: Running, key: str) -> None:
    answers.append(send(running, key))


def _send_http(running: Running, key: str) -> bool:
    return post(running, encode(trace_request([chat_span(key)]), PROTOBUF)).status_code == 200


def _send_grpc(running: Running, key: str) -> bool:
    with grpc.insecure_channel(running.grpc_endpoint) as channel:
        body = trace_request([chat_span(key)]).SerializeToString()
        raw = channel.unary_unary(TRACES)(body, timeout=20)
    return not ExportTraceServiceResponse.FromString(raw).HasField("partial_success")


# --- 9: values nested past the parsers' limits -------------------------------------------------


@pytest.mark.parametrize("shape, depth", [("kvlist", 40), ("array", 60), ("array", 2_000)])
@pytest.mark.parametrize("transport", ["http", "grpc"])
def test_a_protobuf_value_nested_too_deep_costs_its_span_not_the_request(
    server, shape, depth, transport
):
    good = conversation()
    body = spans_request(
        chat_span(good).SerializeToString(), deep_span(chat_span(conversation()), depth, shape)
    )
    if transport == "http":
        answer = post(server, body)
        assert answer.status_code == 200, answer.content
        response = ExportTraceServiceResponse.FromString(answer.content)
    else:
        with grpc.insecure_channel(server.grpc_endpoint) as channel:
            response = ExportTraceServiceResponse.FromString(
                channel.unary_unary(TRACES)(body, timeout=10)
            )
    assert response.partial_success.rejected_spans == 1
    assert "attribute_too_deep" in response.partial_success.error_message
    assert [turn.text for turn in server.sink.session_for(good).turns] == ["question 0", "answer 0"]


@pytest.mark.parametrize("where", ["body", "attribute"])
def test_a_log_record_nested_too_deep_costs_the_record_not_the_request(server, where):
    good = LogRecord(event_name="gen_ai.user.message", body=any_value({"content": "hi"}))
    value = deep_value(200)
    # LogRecord.body is field 5, LogRecord.attributes field 6 (a KeyValue).
    deep = _field(5, value) if where == "body" else _field(6, _field(1, b"k") + _field(2, value))
    record_fields = _field(2, good.SerializeToString()) + _field(2, deep)
    body = _field(1, _field(2, record_fields))
    answer = post(server, body, PROTOBUF, "logs")
    assert answer.status_code == 200, answer.content
    response = ExportLogsServiceResponse.FromString(answer.content)
    assert response.partial_success.rejected_log_records == 1
    assert "attribute_too_deep" in response.partial_success.error_message


@pytest.mark.parametrize("shape, depth", [("kvlist", 300), ("array", 2_000)])
def test_a_json_value_nested_past_the_parser_limit_costs_its_span(server, shape, depth):
    """orjson refuses documents nested past 1,024 levels; the span that is, not the request."""
    good = conversation()
    document = orjson.loads(otlp_json(trace_request([chat_span(good), chat_span(conversation())])))
    deep_attribute = orjson.dumps({"key": "deep", "value": "DEEP"}).decode()
    document["resourceSpans"][0]["scopeSpans"][0]["spans"][1]["attributes"].append("DEEP")
    text = orjson.dumps(document).decode().replace('"DEEP"', deep_attribute, 1)
    text = text.replace('"DEEP"', deep_json_value(depth, shape), 1)
    answer = post(server, text.encode(), JSON)
    assert answer.status_code == 200, answer.content
    partial = orjson.loads(answer.content)["partialSuccess"]
    assert partial["rejectedSpans"] == "1"
    assert "attribute_too_deep" in partial["errorMessage"]
    assert server.sink.session_for(good).turns


# --- 11: strict ids -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "trace_id",
    [
        "0x" + "ab" * 15,
        "-" + "1" * 31,
        " " + "ab" * 15 + " ",
        "+" + "1" * 31,
        "1_" + "2" * 30,
        "٣" * 32,  # Arabic-Indic digits: int() reads them as 3s
        "ab" * 15 + "g1",
    ],
)
def test_json_ids_must_be_exactly_hex_digits(server, trace_id):
    document = orjson.loads(otlp_json(trace_request([chat_span(conversation())])))
    document["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"] = trace_id
    answer = post(server, orjson.dumps(document), JSON)
    assert answer.status_code == 200
    partial = orjson.loads(answer.content)["partialSuccess"]
    assert partial["rejectedSpans"] == "1" and "invalid_id" in partial["errorMessage"]


def test_upper_case_json_ids_are_read_as_lower_case(server):
    key = conversation()
    request = trace_request([chat_span(key)])
    document = orjson.loads(otlp_json(request))
    span = document["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    span["traceId"] = span["traceId"].upper()
    assert post(server, orjson.dumps(document), JSON).status_code == 200
    expected = request.resource_spans[0].scope_spans[0].spans[0].trace_id.hex()
    assert server.sink.session_for(key).trace_ids == [expected]


# --- 10: refusals before the application are counted and logged quietly -------------------------


def test_http_parser_errors_are_400_counted_and_one_rate_limited_warning(caplog):
    caplog.set_level(logging.INFO)
    with serving() as handle:
        before = rejected(handle, "malformed_http")
        for _ in range(5):
            with raw_connection(handle) as sock:
                sock.sendall(b"NOT HTTP AT ALL\r\n\r\n")
                assert sock.recv(100).startswith(b"HTTP/1.1 400")
        assert rejected(handle, "malformed_http") == before + 5
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len([r for r in warnings if getattr(r, "reason", "") == "malformed_http"]) == 1
    assert not [r for r in warnings if "Invalid HTTP" in r.getMessage()]  # uvicorn's, each time
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


def test_a_client_gone_mid_body_is_counted_and_is_no_error(server, caplog):
    caplog.set_level(logging.INFO)
    before = rejected(server, "client_disconnected")
    with raw_connection(server) as sock:
        sock.sendall(
            b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\n"
            b"Content-Length: 100000\r\n\r\n" + b"\x0a" * 100
        )
    eventually(
        lambda: rejected(server, "client_disconnected"),
        lambda count: count == before + 1,
        what="the disconnect to be counted",
    )
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


def test_grpc_message_over_the_cap_is_resource_exhausted_and_counted():
    with serving(**{"otlp.max_decompressed_bytes": 1 << 20}) as handle:
        before = rejected(handle, "too_large", "grpc")
        body = trace_request([chat_span(conversation(), extra={"blob": "a" * (2 << 20)})])
        with (
            grpc.insecure_channel(handle.grpc_endpoint) as channel,
            pytest.raises(grpc.RpcError) as caught,
        ):
            channel.unary_unary(TRACES)(body.SerializeToString(), timeout=10)
        assert caught.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert rejected(handle, "too_large", "grpc") == before + 1


def test_grpc_metadata_over_the_cap_is_resource_exhausted_and_counted(server):
    before = rejected(server, "headers_too_large", "grpc")
    body = trace_request([chat_span(conversation())]).SerializeToString()
    padding = (("x-padding", "p" * 20_000),)
    with (
        grpc.insecure_channel(server.grpc_endpoint) as channel,
        pytest.raises(grpc.RpcError) as caught,
    ):
        channel.unary_unary(TRACES)(body, metadata=padding, timeout=10)
    assert caught.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert rejected(server, "headers_too_large", "grpc") == before + 1


# --- 8: connections, deadlines, concurrency -----------------------------------------------------

HEADERS = b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\n"
STALLED = HEADERS + b"Content-Length: 1000\r\n\r\n" + b"\x0a\x00"  # the rest never comes


def in_flight(running: Running, count: int) -> None:
    eventually(
        lambda: metric_value(running.ops_url, "turnwatch_otlp_requests_in_flight"),
        lambda now: now == count,
        what=f"{count} requests in progress",
    )


@pytest.fixture(scope="module")
def deadlines() -> Iterator[Running]:
    timeouts = {"otlp.header_timeout_seconds": 0.5, "otlp.body_timeout_seconds": 1.0}
    with serving(**timeouts) as handle:
        yield handle


def test_a_connection_that_sends_nothing_or_half_its_headers_is_closed(deadlines):
    before = rejected(deadlines, "header_timeout")
    with raw_connection(deadlines) as silent, raw_connection(deadlines) as slow:
        slow.sendall(HEADERS)  # never the blank line that ends them
        assert closed_by_server(silent) and closed_by_server(slow)
    assert rejected(deadlines, "header_timeout") == before + 2


def test_a_body_that_never_comes_is_400_and_the_connection_closed(deadlines):
    before = rejected(deadlines, "body_timeout")
    with raw_connection(deadlines) as sock:
        sock.sendall(STALLED)  # a Content-Length that lies
        answer = sock.recv(65536)
        assert answer.startswith(b"HTTP/1.1 400") and b"connection: close" in answer.lower()
        assert closed_by_server(sock)
    assert rejected(deadlines, "body_timeout") == before + 1


@pytest.fixture(scope="module")
def crowded() -> Iterator[Running]:
    with serving(**{"otlp.max_connections": 4, "otlp.body_timeout_seconds": 20.0}) as handle:
        yield handle


def test_idle_connections_make_room_for_a_new_client(crowded):
    before = rejected(crowded, "connection_evicted")
    idle = [raw_connection(crowded) for _ in range(4)]
    try:
        key = conversation()
        with httpx.Client(timeout=10) as client:  # a fifth connection, past the cap
            answer = client.post(
                f"{crowded.http_url}/v1/traces",
                content=encode(trace_request([chat_span(key)]), PROTOBUF),
                headers={"Content-Type": PROTOBUF},
            )
        assert answer.status_code == 200
        assert crowded.sink.session_for(key).turns
        assert rejected(crowded, "connection_evicted") == before + 1
        assert closed_by_server(idle[0])  # the longest idle made room
    finally:
        for sock in idle:
            sock.close()


def test_with_every_connection_busy_a_new_one_is_closed(crowded):
    before = rejected(crowded, "too_many_connections")
    busy = [raw_connection(crowded) for _ in range(4)]
    try:
        for sock in busy:
            sock.sendall(STALLED)
        in_flight(crowded, 4)
        with raw_connection(crowded) as late:
            assert closed_by_server(late)
        assert rejected(crowded, "too_many_connections") == before + 1
    finally:
        for sock in busy:
            sock.close()
    in_flight(crowded, 0)


def test_requests_past_max_concurrent_requests_are_503_with_retry_after():
    with serving(**{"otlp.max_concurrent_requests": 2}) as narrow:
        stalled = [raw_connection(narrow) for _ in range(2)]
        try:
            for sock in stalled:
                sock.sendall(STALLED)
            in_flight(narrow, 2)
            for media_type in (PROTOBUF, JSON):
                answer = post(narrow, encode(trace_request(spans_for(1)), media_type), media_type)
                assert answer.status_code == 503 and answer.headers["retry-after"] == "2"
            assert rejected(narrow, "too_many_requests") == 2
        finally:
            for sock in stalled:
                sock.close()
        in_flight(narrow, 0)
        assert post(narrow, encode(trace_request(spans_for(1)), PROTOBUF)).status_code == 200


def test_key_values_helper_builds_what_the_decoder_reads():
    """Guard for the deep builders: the same nesting at a shallow depth decodes as nested lists."""
    result = otlp_proto.decode_traces(
        spans_request(deep_span(chat_span("k"), 2)), otlp_proto.DecodeLimits()
    )
    [span] = result.items
    assert span.attributes["deep"] == [["leaf"]]
    assert key_values({"a": 1})[0].value.int_value == 1
