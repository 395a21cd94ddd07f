"""The OTLP error contract against a running server on loopback (httpx and real gRPC stubs).

200 (with partial_success for unusable spans), 400 undecodable, 401 bad token, 413 too large
(before and after decompression), 415 unsupported type or encoding, 503 + Retry-After when the
handoff queue is saturated; every refusal counted by reason on /metrics; never a 500.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import logging
import threading
import time
import uuid
import zlib
from collections.abc import Iterator

import grpc
import httpx
import orjson
import pytest
from google.rpc.status_pb2 import Status
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse
from opentelemetry.proto.collector.logs.v1.logs_service_pb2_grpc import LogsServiceStub
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2_grpc import TraceServiceStub
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord
from turnwatch.collector.pipeline import HandedOn

from tests.conftest import CapturingSink, Running, make_settings, settled, start_service
from tests.otlp_requests import (
    JSON,
    LOOPBACK,
    PROTOBUF,
    any_value,
    chat_span,
    deep_attribute_request,
    encode,
    key_values,
    logs_request,
    metric_value,
    otlp_json,
    trace_request,
)
from tests.stages import collector_into
from tests.waiting import eventually
from turnwatch.app.serve import BackgroundService
from turnwatch.schema import Session

MiB = 1024 * 1024
REQUEST_CAP = 1 * MiB
DECOMPRESSED_CAP = 2 * MiB
ATTRIBUTE_CAP = 4096
TOKEN = "s3cret-Tw-7f3a9c1e"
REJECTED = "turnwatch_otlp_requests_rejected_total"
ITEMS_REJECTED = "turnwatch_spans_rejected_total"
MEDIA_TYPES = [PROTOBUF, JSON]
# Every conversation here arrives in one request, so nothing can be split by closing it sooner.
IDLE = {"sessions.idle_timeout_seconds": 0.1}


@pytest.fixture(scope="module")
def server() -> Iterator[Running]:
    handle = start_service(
        make_settings(
            **{
                "otlp.max_request_bytes": REQUEST_CAP,
                "otlp.max_decompressed_bytes": DECOMPRESSED_CAP,
                "otlp.max_attribute_bytes": ATTRIBUTE_CAP,
                **IDLE,
            }
        )
    )
    yield handle
    handle.background.stop()


@pytest.fixture(scope="module")
def authed() -> Iterator[Running]:
    handle = start_service(make_settings(**{"otlp.auth_token": TOKEN, **IDLE}))
    yield handle
    handle.background.stop()


def conversation() -> str:
    return f"conv-{uuid.uuid4().hex[:12]}"


def post(
    running: Running,
    body: bytes,
    media_type: str | None = PROTOBUF,
    signal: str = "traces",
    **headers: str,
) -> httpx.Response:
    sent = {"Content-Type": media_type} if media_type else {}
    sent.update({name.replace("_", "-"): value for name, value in headers.items()})
    return LOOPBACK.post(f"{running.http_url}/v1/{signal}", content=body, headers=sent, timeout=30)


def status_of(response: httpx.Response) -> Status:
    """The google.rpc.Status error body, in the content type the server answered with."""
    if response.headers["content-type"].startswith(JSON):
        document = orjson.loads(response.content)
        return Status(code=document["code"], message=document["message"])
    status = Status()
    status.ParseFromString(response.content)
    return status


def rejected(running: Running, reason: str, transport: str = "http") -> float:
    return metric_value(running.ops_url, REJECTED, transport=transport, reason=reason)


def valid_body(key: str, media_type: str = PROTOBUF) -> bytes:
    return encode(trace_request([chat_span(key)]), media_type)


# --- 200 ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("signal", ["traces", "logs"])
def test_empty_request_is_success_in_the_request_content_type(server, signal):
    response = post(server, b"", PROTOBUF, signal)
    assert response.status_code == 200
    assert response.headers["content-type"] == PROTOBUF
    parsed = ExportTraceServiceResponse() if signal == "traces" else ExportLogsServiceResponse()
    parsed.ParseFromString(response.content)
    assert not parsed.HasField("partial_success")

    response = post(server, b"{}", JSON, signal)
    assert response.status_code == 200
    assert response.headers["content-type"] == JSON
    assert "partialSuccess" not in orjson.loads(response.content)


def _nested(depth: int) -> object:
    value: object = "leaf"
    for _ in range(depth):
        value = {"inner": value}
    return value


@pytest.mark.parametrize("media_type", MEDIA_TYPES)
def test_partial_success_rejects_bad_spans_and_keeps_the_good_ones(server, media_type):
    good, bad = conversation(), conversation()
    spans = [
        chat_span(good, 0),
        chat_span(bad, 1, trace_id=b"\x01" * 8),  # 8-byte trace id
        chat_span(bad, 2, span_id=b""),  # no span id
        chat_span(bad, 3, extra={"gen_ai.input.messages": "x" * (ATTRIBUTE_CAP + 1)}),
        chat_span(bad, 4, extra={"app.payload": _nested(20)}),
        chat_span(good, 5),
    ]
    before = {
        reason: metric_value(server.ops_url, ITEMS_REJECTED, signal="traces", reason=reason)
        for reason in ("invalid_id", "missing_id", "attribute_too_large", "attribute_too_deep")
    }
    sessions_before = settled(server.ops_url)

    response = post(server, encode(trace_request(spans), media_type), media_type)

    assert response.status_code == 200
    assert response.headers["content-type"] == media_type
    if media_type == PROTOBUF:
        parsed = ExportTraceServiceResponse()
        parsed.ParseFromString(response.content)
        count, message = parsed.partial_success.rejected_spans, parsed.partial_success.error_message
    else:
        partial = orjson.loads(response.content)["partialSuccess"]
        count, message = int(partial["rejectedSpans"]), partial["errorMessage"]
    assert count == 4
    for reason in before:
        assert f"1 {reason}" in message
    assert "xxxx" not in message and "leaf" not in message  # reasons, never content
    for reason, value in before.items():
        after = metric_value(server.ops_url, ITEMS_REJECTED, signal="traces", reason=reason)
        assert after == value + 1, reason

    session = server.sink.session_for(good)
    assert [turn.text for turn in session.turns] == [
        "question 0",
        "answer 0",
        "question 5",
        "answer 5",
    ]
    # Nothing left open or on its way, and one session more: the rejected spans opened none.
    sessions_after = settled(server.ops_url)
    assert sessions_after.closed - sessions_before.closed == 1
    assert sessions_after.delivered - sessions_before.delivered == 1
    assert all(s.conversation_key != bad for s in server.sink.sessions)


def test_partial_success_for_log_records(server):
    records = [
        LogRecord(time_unix_nano=time.time_ns(), trace_id=b"\x02" * 5, event_name="x"),
        LogRecord(
            time_unix_nano=time.time_ns(),
            event_name="gen_ai.user.message",
            body=any_value({"content": "y" * (ATTRIBUTE_CAP + 1)}),
        ),
        LogRecord(time_unix_nano=time.time_ns(), attributes=key_values({"k": "v"})),
    ]
    for media_type in MEDIA_TYPES:
        response = post(server, encode(logs_request(records), media_type), media_type, "logs")
        assert response.status_code == 200
        if media_type == PROTOBUF:
            parsed = ExportLogsServiceResponse()
            parsed.ParseFromString(response.content)
            assert parsed.partial_success.rejected_log_records == 2
            assert "invalid_id" in parsed.partial_success.error_message
        else:
            partial = orjson.loads(response.content)["partialSuccess"]
            assert int(partial["rejectedLogRecords"]) == 2
            assert "attribute_too_large" in partial["errorMessage"]


# --- 400 ---------------------------------------------------------------------------------------

GARBAGE_PROTOBUF = [
    b"\x0a\x10short",  # a length prefix pointing past the end
    b"\xff" * 64,  # invalid wire type
    b"\x0a\x02\x0a\xff",  # truncated nested message
    b"\x0a\x04\x12\x02\x12\xff",
]


@pytest.mark.parametrize("body", GARBAGE_PROTOBUF)
@pytest.mark.parametrize("signal", ["traces", "logs"])
def test_garbage_protobuf_is_400(server, body, signal):
    before = rejected(server, "undecodable")
    response = post(server, body, PROTOBUF, signal)
    assert response.status_code == 400
    assert response.headers["content-type"] == PROTOBUF
    status = status_of(response)
    assert status.message
    assert status.code == grpc.StatusCode.INVALID_ARGUMENT.value[0]  # a google.rpc.Code
    assert rejected(server, "undecodable") == before + 1


@pytest.mark.parametrize(
    "body",
    [b"{not json", b"", b"[1, 2]", b'"text"', b'{"resourceSpans": "nope"}', b"\xff\xfe{}", b"{}x"],
)
def test_invalid_json_is_400_with_a_json_status(server, body):
    before = rejected(server, "undecodable")
    response = post(server, body, JSON)
    assert response.status_code == 400
    assert response.headers["content-type"] == JSON
    assert status_of(response).message
    assert rejected(server, "undecodable") == before + 1


@pytest.mark.parametrize(
    "encoding, body",
    [
        ("gzip", b"this is not gzip at all"),
        ("gzip", gzip.compress(b"\x0a\x00" * 100)[:-12]),  # truncated stream
        ("deflate", b"\x00\x01\x02 not deflate either"),
    ],
)
def test_invalid_compressed_body_is_400(server, encoding, body):
    before = rejected(server, "undecodable")
    response = post(server, body, PROTOBUF, content_encoding=encoding)
    assert response.status_code == 400
    assert rejected(server, "undecodable") == before + 1


# --- compression -------------------------------------------------------------------------------


def _raw_deflate(data: bytes) -> bytes:
    compressor = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    return compressor.compress(data) + compressor.flush()


@pytest.mark.parametrize(
    "encoding, compress",
    [("gzip", gzip.compress), ("deflate", zlib.compress), ("deflate", _raw_deflate)],
    ids=["gzip", "zlib-deflate", "raw-deflate"],
)
@pytest.mark.parametrize("media_type", MEDIA_TYPES)
def test_compressed_bodies_are_accepted_and_ingested(server, encoding, compress, media_type):
    key = conversation()
    response = post(
        server, compress(valid_body(key, media_type)), media_type, content_encoding=encoding
    )
    assert response.status_code == 200, response.content
    session = server.sink.session_for(key)
    assert [turn.text for turn in session.turns] == ["question 0", "answer 0"]


def test_multi_member_gzip_is_inflated_whole(server):
    """`cat a.gz b.gz` is one valid gzip body; protobuf concatenation merges both requests."""
    first, second = conversation(), conversation()
    body = gzip.compress(valid_body(first)) + gzip.compress(valid_body(second))
    assert post(server, body, content_encoding="gzip").status_code == 200
    assert server.sink.session_for(first).turns
    assert server.sink.session_for(second).turns
    trailing = gzip.compress(valid_body(conversation())) + b"trailing junk"
    assert post(server, trailing, content_encoding="gzip").status_code == 400


# --- 413 ---------------------------------------------------------------------------------------


def test_body_over_the_cap_by_content_length_is_413(server):
    before = rejected(server, "too_large")
    body = valid_body(conversation()) + b"\x00" * REQUEST_CAP  # still within protobuf padding
    response = post(server, body, PROTOBUF)
    assert response.status_code == 413
    assert status_of(response).message
    assert rejected(server, "too_large") == before + 1


def test_chunked_body_over_the_cap_without_content_length_is_413(server):
    before = rejected(server, "too_large")
    sent = {"n": 0}

    def chunks() -> Iterator[bytes]:
        for _ in range(REQUEST_CAP // 16_384 + 8):
            sent["n"] += 1
            yield b"\x00" * 16_384

    with httpx.Client(timeout=30) as client:
        request = client.build_request(
            "POST",
            f"{server.http_url}/v1/traces",
            content=chunks(),
            headers={"Content-Type": PROTOBUF},
        )
        assert "content-length" not in request.headers
        assert request.headers["transfer-encoding"] == "chunked"
        response = client.send(request)
    assert response.status_code == 413
    assert rejected(server, "too_large") == before + 1


def _rss_kib(field: str = "VmRSS") -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise AssertionError(f"{field} not in /proc/self/status")


def _bomb(compressor: zlib._Compress, total: int) -> bytes:
    """`total` bytes of zeros, compressed chunk by chunk (never held in memory at once)."""
    chunk = bytes(MiB)
    parts = [compressor.compress(chunk) for _ in range(total // MiB)]
    return b"".join(parts) + compressor.flush()


@pytest.mark.slow  # a long run: two 200 MiB bombs compressed
@pytest.mark.parametrize("encoding", ["gzip", "deflate"])
def test_decompression_bomb_is_413_without_inflating_it(server, encoding):
    wbits = 16 + zlib.MAX_WBITS if encoding == "gzip" else zlib.MAX_WBITS
    bomb = _bomb(zlib.compressobj(9, zlib.DEFLATED, wbits), 200 * MiB)
    assert len(bomb) < 300 * 1024  # ~200 KB on the wire: under the request cap
    before = rejected(server, "too_large")
    # Reset the peak-RSS counter so VmHWM below measures only this request (Linux >= 4.0).
    peak_measurable = True
    try:
        with open("/proc/self/clear_refs", "w") as clear:
            clear.write("5")
    except OSError:
        peak_measurable = False
    rss_before = _rss_kib()

    response = post(server, bomb, PROTOBUF, content_encoding=encoding)

    assert response.status_code == 413
    assert "decompress" in status_of(response).message
    assert status_of(response).code == grpc.StatusCode.RESOURCE_EXHAUSTED.value[0]
    grown_mib = (_rss_kib() - rss_before) / 1024
    assert grown_mib < 50, f"RSS grew by {grown_mib:.0f} MiB on a 200 MiB bomb"
    if peak_measurable:
        peak_mib = (_rss_kib("VmHWM") - rss_before) / 1024
        assert peak_mib < 50, f"peak RSS rose by {peak_mib:.0f} MiB on a 200 MiB bomb"
    assert rejected(server, "too_large") == before + 1


def test_decompressed_body_just_over_the_cap_is_413_and_under_is_accepted(server):
    key = conversation()
    body = valid_body(key)
    padded_over = body + b"\x00" * (DECOMPRESSED_CAP - len(body) + 1)  # zero bytes: no fields
    assert post(server, gzip.compress(padded_over), content_encoding="gzip").status_code == 413
    padded_exact = body + b"\x00" * (DECOMPRESSED_CAP - len(body))
    response = post(server, gzip.compress(padded_exact), content_encoding="gzip")
    # Zero padding is not a valid protobuf field, so exactly-at-cap decodes to a 400, not a 413.
    assert response.status_code == 400
    assert post(server, gzip.compress(body), content_encoding="gzip").status_code == 200


# --- 415 ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("media_type", ["text/plain", "application/xml", "application/grpc", None])
def test_unsupported_content_type_is_415(server, media_type):
    before = rejected(server, "unsupported_media_type")
    response = post(server, valid_body(conversation()), media_type)
    assert response.status_code == 415
    assert status_of(response).message
    assert rejected(server, "unsupported_media_type") == before + 1


def test_content_type_parameters_and_case_are_accepted(server):
    response = post(server, valid_body(conversation()), "Application/X-Protobuf; charset=binary")
    assert response.status_code == 200


@pytest.mark.parametrize("encoding", ["br", "zstd", "snappy", "gzip, br", "compress"])
def test_unknown_content_encoding_is_415(server, encoding):
    before = rejected(server, "unsupported_encoding")
    response = post(server, valid_body(conversation()), PROTOBUF, content_encoding=encoding)
    assert response.status_code == 415
    assert rejected(server, "unsupported_encoding") == before + 1


# --- 401 ---------------------------------------------------------------------------------------


def test_bearer_token_is_required_and_never_echoed_or_logged(authed, caplog):
    caplog.set_level(logging.DEBUG)
    wrong = "Bearer guess-" + TOKEN[::-1]
    before = rejected(authed, "unauthorized")
    responses = [
        post(authed, valid_body(conversation())),
        post(authed, valid_body(conversation()), authorization=wrong),
        post(authed, valid_body(conversation()), authorization=TOKEN),  # no scheme
        post(authed, valid_body(conversation()), authorization=f"Bearer {TOKEN}x"),
        post(authed, b"{}", JSON, authorization=f"Basic {TOKEN}"),
    ]
    for response in responses:
        assert response.status_code == 401
        assert response.headers["www-authenticate"].lower().startswith("bearer")
        assert status_of(response).code == grpc.StatusCode.UNAUTHENTICATED.value[0]
    assert rejected(authed, "unauthorized") == before + len(responses)

    key = conversation()
    accepted = post(authed, valid_body(key), authorization=f"Bearer {TOKEN}")
    assert accepted.status_code == 200
    assert authed.sink.session_for(key).turns
    # The auth scheme is case-insensitive (RFC 9110 section 11.1).
    assert post(authed, b"{}", JSON, authorization=f"bearer {TOKEN}").status_code == 200

    for response in [*responses, accepted]:
        assert TOKEN not in response.text
        assert TOKEN[::-1] not in response.text
        assert all(TOKEN not in value for value in response.headers.values())
    assert TOKEN not in LOOPBACK.get(f"{authed.ops_url}/metrics").text
    for record in caplog.records:
        assert TOKEN not in record.getMessage()
        assert TOKEN not in str(record.__dict__)
        assert TOKEN[::-1] not in str(record.__dict__)


def test_auth_is_checked_before_the_body_is_read(authed):
    response = post(authed, b"\x00" * (2 * MiB), "text/plain")
    assert response.status_code == 401


# --- never a 500 -------------------------------------------------------------------------------

HOSTILE_JSON = [
    b"[" * 100_000 + b"]" * 100_000,  # nesting past any parser's recursion limit
    b'{"resourceSpans": [' + b"[" * 5000 + b"]" * 5000 + b"]}",
    b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": 5, "spanId": []}]}]}]}',
    b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"startTimeUnixNano": "1e30"}]}]}]}',
    b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "0102030405060708090a0b0c0d0e0f10",'
    b' "spanId": "0102030405060708", "startTimeUnixNano": "99999999999999999999999999",'
    b' "attributes": [{"key": "session.id", "value": {"stringValue": "huge-time"}}]}]}]}]}',
    b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "0102030405060708090a0b0c0d0e0f10",'
    b' "spanId": "0102030405060708", "endTimeUnixNano": 1e300, "kind": 1e300,'
    b' "attributes": [{"key": "session.id", "value": {"doubleValue": 1e308}},'
    b' {"key": "x", "value": {"intValue": "' + b"9" * 5000 + b'"}}]}]}]}]}',
    b'{"resourceLogs": [{"scopeLogs": [{"logRecords": [{"body": {"kvlistValue": 3}}]}]}]}',
    b'{"resourceSpans": [{"resource": 7, "scopeSpans": {"spans": 1}}]}',
    b'{"resourceSpans": [null, 1, "x", [], {"scopeSpans": [null, {"spans": [null, 1]}]}]}',
]


def _deep_proto(depth: int) -> bytes:
    return deep_attribute_request(chat_span(conversation()), depth)


@pytest.mark.parametrize("index", range(len(HOSTILE_JSON)))
def test_hostile_json_never_gets_a_500(server, index):
    signal = "logs" if b"resourceLogs" in HOSTILE_JSON[index] else "traces"
    response = post(server, HOSTILE_JSON[index], JSON, signal)
    assert response.status_code in (200, 400), response.content
    key = conversation()
    assert post(server, valid_body(key)).status_code == 200
    assert server.sink.session_for(key).turns  # the pipeline (and its sweeper) still works


@pytest.mark.parametrize("depth", [17, 90, 200, 2000])
def test_deeply_nested_protobuf_never_gets_a_500(server, depth):
    response = post(server, _deep_proto(depth), PROTOBUF)
    assert response.status_code in (200, 400)
    if response.status_code == 200:
        parsed = ExportTraceServiceResponse()
        parsed.ParseFromString(response.content)
        assert parsed.partial_success.rejected_spans == 1


# --- 503 ---------------------------------------------------------------------------------------


class BlockingSink(CapturingSink):
    """A next stage that stalls until released, so the handoff queue fills deterministically."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()

    async def deliver(self, session: Session, handed_on: HandedOn | None = None) -> bool:
        while not self.release.is_set():
            await asyncio.sleep(0.01)
        return await super().deliver(session)


@pytest.fixture
def saturated() -> Iterator[Running]:
    """A server whose handoff queue (size 1) is full: one session stuck in delivery, one queued."""
    settings = make_settings(**{"handoff.queue_size": 1, "handoff.high_watermark": 1.0, **IDLE})
    sink = BlockingSink()
    background = BackgroundService(settings, collector_into(sink))  # raw keys, as conftest
    running = Running(background, background.start(), sink)
    try:
        assert LOOPBACK.get(f"{running.ops_url}/readyz").status_code == 200
        for sent in (1, 2):  # the first is taken by the stalled sink, the second waits in the queue
            assert post(running, valid_body(conversation())).status_code == 200
            eventually(  # closed by the idle timeout
                lambda: metric_value(running.ops_url, "turnwatch_sessions_closed_total"),
                lambda closed, sent=sent: closed == sent,
                what=f"session {sent} to close",
            )
        eventually(
            lambda: LOOPBACK.get(f"{running.ops_url}/readyz").status_code,
            lambda status: status == 503,
            timeout=10,
            what="the handoff queue to saturate",
        )
        yield running
    finally:
        sink.release.set()
        background.stop()


def test_overload_is_503_with_a_short_retry_after_then_recovers(saturated):
    before = rejected(saturated, "overloaded")
    for media_type in MEDIA_TYPES:
        response = post(saturated, valid_body(conversation(), media_type), media_type)
        assert response.status_code == 503
        assert response.headers["content-type"] == media_type
        assert 1 <= int(response.headers["retry-after"]) <= 5
        assert status_of(response).code == grpc.StatusCode.UNAVAILABLE.value[0]
    response = post(saturated, b"", PROTOBUF, "logs")
    assert response.status_code == 503
    assert rejected(saturated, "overloaded") == before + 3

    saturated.sink.release.set()
    saturated.sink.wait_for(2)
    key = conversation()
    response = eventually(
        lambda: post(saturated, valid_body(key)),
        lambda answer: answer.status_code != 503,
        timeout=10,
        what="the receiver to accept again after the sink was released",
    )
    assert response.status_code == 200
    assert saturated.sink.session_for(key).turns


def test_overload_is_unavailable_over_grpc(saturated):
    before = rejected(saturated, "overloaded", "grpc")
    with grpc.insecure_channel(saturated.grpc_endpoint) as channel:
        with pytest.raises(grpc.RpcError) as caught:
            TraceServiceStub(channel).Export(trace_request([chat_span(conversation())]), timeout=10)
        assert caught.value.code() == grpc.StatusCode.UNAVAILABLE
        with pytest.raises(grpc.RpcError) as caught:
            LogsServiceStub(channel).Export(logs_request([]), timeout=10)
        assert caught.value.code() == grpc.StatusCode.UNAVAILABLE
    assert rejected(saturated, "overloaded", "grpc") == before + 2


# --- gRPC --------------------------------------------------------------------------------------


@contextlib.contextmanager
def trace_stub(running: Running, **options: object) -> Iterator[TraceServiceStub]:
    with grpc.insecure_channel(running.grpc_endpoint, **options) as channel:
        yield TraceServiceStub(channel)


def test_grpc_wrong_or_missing_token_is_unauthenticated(authed, caplog):
    caplog.set_level(logging.DEBUG)
    request = trace_request([chat_span(conversation())])
    before = rejected(authed, "unauthorized", "grpc")
    with trace_stub(authed) as stub:
        for metadata in [(), (("authorization", "Bearer nope"),), (("authorization", TOKEN),)]:
            with pytest.raises(grpc.RpcError) as caught:
                stub.Export(request, metadata=metadata, timeout=10)
            assert caught.value.code() == grpc.StatusCode.UNAUTHENTICATED
            assert TOKEN not in (caught.value.details() or "")
        key = conversation()
        response = stub.Export(
            trace_request([chat_span(key)]),
            metadata=(("authorization", f"Bearer {TOKEN}"),),
            timeout=10,
        )
        assert not response.HasField("partial_success")
    assert authed.sink.session_for(key).turns
    assert rejected(authed, "unauthorized", "grpc") == before + 3
    assert TOKEN not in caplog.text


def test_grpc_message_past_the_cap_is_resource_exhausted(server):
    oversized = trace_request(
        [chat_span(conversation(), extra={"blob": "a" * (DECOMPRESSED_CAP + 1024)})]
    )
    with trace_stub(server) as stub:
        with pytest.raises(grpc.RpcError) as caught:
            stub.Export(oversized, timeout=30)
        assert caught.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        # The cap holds after decompression too: a few KiB of gzip on the wire is still refused.
        with pytest.raises(grpc.RpcError) as caught:
            stub.Export(oversized, timeout=30, compression=grpc.Compression.Gzip)
        assert caught.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        key = conversation()
        stub.Export(trace_request([chat_span(key)]), timeout=10, compression=grpc.Compression.Gzip)
    assert server.sink.session_for(key).turns


def test_grpc_partial_success(server):
    good = conversation()
    request = trace_request(
        [
            chat_span(good),
            chat_span(conversation(), 1, trace_id=b"\x00" * 16),
            chat_span(conversation(), 2, extra={"gen_ai.output.messages": "z" * 10_000}),
        ]
    )
    with trace_stub(server) as stub:
        response = stub.Export(request, timeout=10)
    assert response.partial_success.rejected_spans == 2
    assert "invalid_id" in response.partial_success.error_message
    assert "attribute_too_large" in response.partial_success.error_message
    assert [t.text for t in server.sink.session_for(good).turns] == ["question 0", "answer 0"]

    with grpc.insecure_channel(server.grpc_endpoint) as channel:
        logs = LogsServiceStub(channel).Export(
            logs_request([LogRecord(span_id=b"\x01\x02\x03")]), timeout=10
        )
    assert logs.partial_success.rejected_log_records == 1


def test_otlp_json_helper_matches_the_protobuf_request():
    """Guard for the builders above: the JSON twin carries hex ids, as OTLP/JSON requires."""
    request = trace_request([chat_span("k")])
    document = orjson.loads(otlp_json(request))
    span = document["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    assert span["traceId"] == request.resource_spans[0].scope_spans[0].spans[0].trace_id.hex()
    assert isinstance(span["startTimeUnixNano"], str)
    assert ExportTraceServiceRequest.FromString(encode(request, PROTOBUF)) == request


@pytest.mark.parametrize("body", GARBAGE_PROTOBUF)
def test_grpc_garbage_is_invalid_argument_and_counted(server, body):
    before = rejected(server, "undecodable", "grpc")
    with grpc.insecure_channel(server.grpc_endpoint) as channel:
        for method in (
            "/opentelemetry.proto.collector.trace.v1.TraceService/Export",
            "/opentelemetry.proto.collector.logs.v1.LogsService/Export",
        ):
            raw = channel.unary_unary(method)  # no serializers: the bytes go out as they are
            with pytest.raises(grpc.RpcError) as caught:
                raw(body, timeout=10)
            assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert rejected(server, "undecodable", "grpc") == before + 2
    with trace_stub(server) as stub:
        assert not stub.Export(trace_request([]), timeout=10).HasField("partial_success")


def test_grpc_token_is_checked_before_the_body_is_decoded(authed):
    with grpc.insecure_channel(authed.grpc_endpoint) as channel:
        raw = channel.unary_unary("/opentelemetry.proto.collector.trace.v1.TraceService/Export")
        with pytest.raises(grpc.RpcError) as caught:
            raw(GARBAGE_PROTOBUF[0], timeout=10)
    assert caught.value.code() == grpc.StatusCode.UNAUTHENTICATED
