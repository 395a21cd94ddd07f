"""OTLP/HTTP receiver: `POST /v1/traces` and `POST /v1/logs`, protobuf or JSON, gzip or deflate.

`POST /v1/metrics` is accepted and counted but not decoded: SDKs that export metrics beside
their traces (traceloop-sdk does by default) would otherwise log a 404 on every export, and
turnwatch has no use for them.

Error contract (OTLP specification): 200 with `partial_success` for spans that cannot be used,
400 for an undecodable body (or one that does not arrive within `otlp.body_timeout_seconds`),
401 for a missing or wrong bearer token, 413 past the size caps and the caps on what a request
holds, 415 for a content type or encoding it does not speak, 503 with Retry-After when the
pipeline or the receiver is saturated, the write-ahead log is full or the disk refused its write
(503 rather than 429 because Python exporters before 1.44 retry 5xx but drop on 429). Responses
use the request's content type; error bodies are `google.rpc.Status`. The body is decompressed and
decoded off the event loop (receiver.py).
"""

from __future__ import annotations

import asyncio
import logging
import time

import orjson
from fastapi import FastAPI, Request, Response
from google.rpc import code_pb2
from google.rpc.status_pb2 import Status
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsPartialSuccess,
    ExportLogsServiceResponse,
)
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTracePartialSuccess,
    ExportTraceServiceResponse,
)
from starlette.requests import ClientDisconnect
from turnwatch.collector import otlp_json, otlp_proto
from turnwatch.collector.body import BodyTooLarge, UnsupportedEncoding
from turnwatch.collector.otlp_common import TooLarge, Undecodable
from turnwatch.collector.receiver import (
    Decoded,
    Decoder,
    IngestOutcome,
    NotAccepted,
    Receiver,
    not_decoded,
)
from turnwatch.collector.wal.requests import RequestBody

log = logging.getLogger("turnwatch.collector.http")

PROTOBUF = "application/x-protobuf"
JSON = "application/json"
TRANSPORT = "http"
CLOSE = {"Connection": "close"}


class _Refusal(Exception):
    def __init__(self, status: int, reason: str, message: str, headers: dict | None = None) -> None:
        super().__init__(message)
        self.status, self.reason, self.message = status, reason, message
        self.headers = headers or {}


def _media_type(request: Request) -> str:
    return request.headers.get("content-type", "").split(";", 1)[0].strip().lower()


async def _read_body(request: Request, limit: int) -> list[bytes]:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise BodyTooLarge("declared body exceeds the limit")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge("body exceeds the limit")
        chunks.append(chunk)
    return chunks


# google.rpc.Status.code is a google.rpc.Code (the gRPC code set), not an HTTP status; the
# OpenTelemetry Collector maps HTTP statuses the same way.
RPC_CODES = {
    400: code_pb2.INVALID_ARGUMENT,
    401: code_pb2.UNAUTHENTICATED,
    413: code_pb2.RESOURCE_EXHAUSTED,
    415: code_pb2.INVALID_ARGUMENT,
    429: code_pb2.RESOURCE_EXHAUSTED,
    503: code_pb2.UNAVAILABLE,
}


def _error_response(media_type: str, refusal: _Refusal) -> Response:
    code = RPC_CODES.get(refusal.status, code_pb2.UNKNOWN)
    if media_type == JSON:
        body = orjson.dumps({"code": code, "message": refusal.message})
        return Response(body, refusal.status, refusal.headers, media_type=JSON)
    body = Status(code=code, message=refusal.message).SerializeToString()
    return Response(body, refusal.status, refusal.headers, media_type=PROTOBUF)


def _success_response(media_type: str, signal: str, outcome: IngestOutcome) -> Response:
    if media_type == JSON:
        payload: dict = {}
        if outcome.rejected:
            count_field = "rejectedSpans" if signal == "traces" else "rejectedLogRecords"
            payload["partialSuccess"] = {
                count_field: str(outcome.rejected),
                "errorMessage": outcome.message,
            }
        return Response(orjson.dumps(payload), 200, media_type=JSON)
    if signal == "metrics":
        return Response(
            ExportMetricsServiceResponse().SerializeToString(), 200, media_type=PROTOBUF
        )
    if signal == "traces":
        response = ExportTraceServiceResponse()
        if outcome.rejected:
            response.partial_success.CopyFrom(
                ExportTracePartialSuccess(
                    rejected_spans=outcome.rejected, error_message=outcome.message
                )
            )
    else:
        response = ExportLogsServiceResponse()
        if outcome.rejected:
            response.partial_success.CopyFrom(
                ExportLogsPartialSuccess(
                    rejected_log_records=outcome.rejected, error_message=outcome.message
                )
            )
    return Response(response.SerializeToString(), 200, media_type=PROTOBUF)


def create_otlp_app(receiver: Receiver) -> FastAPI:
    app = FastAPI(title="turnwatch OTLP receiver", docs_url=None, redoc_url=None, openapi_url=None)
    config = receiver.config
    decoders: dict[tuple[str, str], Decoder] = {
        ("traces", PROTOBUF): otlp_proto.decode_traces,
        ("traces", JSON): otlp_json.decode_traces,
        ("logs", PROTOBUF): otlp_proto.decode_logs,
        ("logs", JSON): otlp_json.decode_logs,
        ("metrics", PROTOBUF): not_decoded,
        ("metrics", JSON): not_decoded,
    }
    retry_after = {"Retry-After": str(config.retry_after_seconds)}

    async def handle(request: Request, signal: str) -> Response:
        started = time.perf_counter()
        media_type = _media_type(request)
        answer_type = media_type if media_type in (PROTOBUF, JSON) else PROTOBUF
        read: list[bytes] | None = None
        try:
            if not receiver.authorized(request.headers.get("authorization")):
                raise _Refusal(
                    401,
                    "unauthorized",
                    "missing or invalid bearer token",
                    {"WWW-Authenticate": "Bearer"},
                )
            decode = decoders.get((signal, media_type))
            if decode is None:
                raise _Refusal(
                    415, "unsupported_media_type", f"content type must be {PROTOBUF} or {JSON}"
                )
            if overload := receiver.overloaded():
                raise _Refusal(503, overload, "pipeline saturated; retry later", retry_after)
            if receiver.saturated():
                raise _Refusal(
                    503, "too_many_requests", "too many requests at once; retry later", retry_after
                )
            with receiver.in_flight():
                read = await _body(request)
                decoded = await _decoded(request, signal, decode, read)
            if signal == "metrics":
                # Never logged ahead nor ingested: nothing of it is kept.
                return _success_response(
                    answer_type, signal, receiver.ignore_request(TRANSPORT, signal)
                )
            try:
                request_body = RequestBody(signal, media_type == JSON, decoded.body)
                outcome = await receiver.ingest(TRANSPORT, request_body, decoded.result)
            except NotAccepted as exc:
                message = "cannot store it; retry later"
                raise _Refusal(503, exc.reason, message, retry_after) from None
            return _success_response(answer_type, signal, outcome)
        except _Refusal as refusal:
            receiver.reject_request(TRANSPORT, signal, refusal.reason)
            if read is None and request.headers.get("content-length") != "0":
                # Refused before its body was read: the connection closes with the answer
                # rather than stay open while the client sends what will only be discarded.
                refusal.headers = {**refusal.headers, **CLOSE}
            return _error_response(answer_type, refusal)
        finally:
            receiver.metrics.request_duration.labels(TRANSPORT).observe(
                time.perf_counter() - started
            )

    async def _body(request: Request) -> list[bytes]:
        try:
            async with asyncio.timeout(config.body_timeout_seconds):
                return await _read_body(request, config.max_request_bytes)
        except TimeoutError:
            # A slow sender, or a Content-Length that promised more than came.
            message = f"body not received within {config.body_timeout_seconds:g} s"
            raise _Refusal(400, "body_timeout", message) from None
        except ClientDisconnect:
            raise _Refusal(400, "client_disconnected", "client went away mid-body") from None
        except TooLarge as exc:
            raise _Refusal(413, exc.reason, str(exc)) from None

    async def _decoded(
        request: Request, signal: str, decode: Decoder, chunks: list[bytes]
    ) -> Decoded:
        try:
            encoding = request.headers.get("content-encoding", "")
            return await receiver.decode(decode, chunks, encoding, signal)
        except TooLarge as exc:
            raise _Refusal(413, exc.reason, str(exc)) from None
        except UnsupportedEncoding:
            raise _Refusal(
                415,
                "unsupported_encoding",
                "content encoding must be gzip, deflate or identity",
            ) from None
        except Undecodable as exc:
            raise _Refusal(400, "undecodable", str(exc)) from None
        except (RecursionError, UnicodeDecodeError, ValueError, TypeError) as exc:
            receiver.warnings.warning(
                "decoder failed on request", "undecodable", error=type(exc).__name__
            )
            raise _Refusal(400, "undecodable", "body could not be decoded") from None

    @app.post("/v1/traces")
    async def export_traces(request: Request) -> Response:
        return await handle(request, "traces")

    @app.post("/v1/logs")
    async def export_logs(request: Request) -> Response:
        return await handle(request, "logs")

    @app.post("/v1/metrics")
    async def export_metrics(request: Request) -> Response:
        return await handle(request, "metrics")

    return app
