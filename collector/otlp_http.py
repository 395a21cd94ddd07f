"""OTLP/HTTP receiver: `POST /v1/traces` and `POST /v1/logs`, protobuf or JSON, gzip or deflate.

Error contract (OTLP specification): 200 with `partial_success` for spans that cannot be used,
400 for an undecodable body, 401 for a missing or wrong bearer token, 413 past the size caps,
415 for a content type or encoding it does not speak, 503 with Retry-After when the pipeline is
saturated (503 rather than 429 because Python exporters before 1.44 retry 5xx but drop on 429).
Responses use the request's content type; error bodies are `google.rpc.Status`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import orjson
from fastapi import FastAPI, Request, Response
from google.rpc import code_pb2
from google.rpc.status_pb2 import Status
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsPartialSuccess,
    ExportLogsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTracePartialSuccess,
    ExportTraceServiceResponse,
)
from turnwatch.collector import otlp_json, otlp_proto
from turnwatch.collector.body import BodyTooLarge, UnsupportedEncoding, decompress
from turnwatch.collector.otlp_common import DecodeLimits, DecodeResult, Undecodable
from turnwatch.collector.receiver import IngestOutcome, NotAccepted, Receiver
from turnwatch.collector.wal.requests import RequestBody

log = logging.getLogger("turnwatch.collector.http")

PROTOBUF = "application/x-protobuf"
JSON = "application/json"
TRANSPORT = "http"

Decoder = Callable[[bytes, DecodeLimits], DecodeResult]


class _Refusal(Exception):
    def __init__(self, status: int, reason: str, message: str, headers: dict | None = None) -> None:
        super().__init__(message)
        self.status, self.reason, self.message = status, reason, message
        self.headers = headers or {}


def _media_type(request: Request) -> str:
    return request.headers.get("content-type", "").split(";", 1)[0].strip().lower()


async def _read_body(request: Request, limit: int) -> bytes:
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
    return b"".join(chunks)


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
    }
    retry_after = {"Retry-After": str(config.retry_after_seconds)}

    async def handle(request: Request, signal: str) -> Response:
        started = time.perf_counter()
        media_type = _media_type(request)
        answer_type = media_type if media_type in (PROTOBUF, JSON) else PROTOBUF
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
            try:
                raw = await _read_body(request, config.max_request_bytes)
                body = decompress(
                    raw, request.headers.get("content-encoding", ""), config.max_decompressed_bytes
                )
                result = decode(body, receiver.limits)
            except BodyTooLarge as exc:
                raise _Refusal(413, "too_large", str(exc)) from None
            except UnsupportedEncoding:
                raise _Refusal(
                    415,
                    "unsupported_encoding",
                    "content encoding must be gzip, deflate or identity",
                ) from None
            except Undecodable as exc:
                raise _Refusal(400, "undecodable", str(exc)) from None
            except (RecursionError, UnicodeDecodeError, ValueError, TypeError) as exc:
                log.warning("decoder failed on request", extra={"error": type(exc).__name__})
                raise _Refusal(400, "undecodable", "body could not be decoded") from None
            try:
                request_body = RequestBody(signal, media_type == JSON, body)
                outcome = await receiver.ingest(TRANSPORT, request_body, result)
            except NotAccepted as exc:
                message = "cannot store it; retry later"
                raise _Refusal(503, exc.reason, message, retry_after) from None
            return _success_response(answer_type, signal, outcome)
        except _Refusal as refusal:
            receiver.reject_request(TRANSPORT, signal, refusal.reason)
            return _error_response(answer_type, refusal)
        finally:
            receiver.metrics.request_duration.labels(TRANSPORT).observe(
                time.perf_counter() - started
            )

    @app.post("/v1/traces")
    async def export_traces(request: Request) -> Response:
        return await handle(request, "traces")

    @app.post("/v1/logs")
    async def export_logs(request: Request) -> Response:
        return await handle(request, "logs")

    return app
