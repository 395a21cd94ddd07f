"""OTLP/gRPC receiver: TraceService and LogsService on the same asyncio loop as HTTP.

gRPC itself enforces the message size cap (after decompression) and answers RESOURCE_EXHAUSTED.
Overload is UNAVAILABLE, which OTLP clients retry with backoff; a wrong token is UNAUTHENTICATED;
a body that is not an OTLP request is INVALID_ARGUMENT.

The services take the raw request bytes and decode them themselves: with the generated handlers,
grpc decodes before the servicer runs, so garbage came back as UNKNOWN (an internal-error code),
was never counted, and was parsed before the token was checked.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

import grpc
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from turnwatch.collector.otlp_common import Undecodable
from turnwatch.collector.otlp_proto import decode_logs, decode_traces
from turnwatch.collector.receiver import IngestOutcome, NotAccepted, Receiver
from turnwatch.collector.wal.requests import RequestBody

TRANSPORT = "grpc"


async def _admit(receiver: Receiver, context: grpc.aio.ServicerContext, signal: str) -> None:
    metadata = dict(context.invocation_metadata() or ())
    if not receiver.authorized(metadata.get("authorization")):
        receiver.reject_request(TRANSPORT, signal, "unauthorized")
        await context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or invalid bearer token")
    if overload := receiver.overloaded():
        receiver.reject_request(TRANSPORT, signal, overload)
        await context.abort(grpc.StatusCode.UNAVAILABLE, "pipeline saturated; retry later")


async def _ingest(
    receiver: Receiver, context: grpc.aio.ServicerContext, body: RequestBody, result
) -> IngestOutcome:
    try:
        return await receiver.ingest(TRANSPORT, body, result)
    except NotAccepted as exc:
        receiver.reject_request(TRANSPORT, body.signal, exc.reason)
        await context.abort(grpc.StatusCode.UNAVAILABLE, "cannot store it; retry later")
        raise  # unreachable: abort raises


async def _invalid(receiver: Receiver, context: grpc.aio.ServicerContext, signal: str) -> None:
    receiver.reject_request(TRANSPORT, signal, "undecodable")
    await context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"body is not an OTLP {signal} request")


class TraceService:
    def __init__(self, receiver: Receiver) -> None:
        self.receiver = receiver

    async def Export(
        self, request: bytes, context: grpc.aio.ServicerContext
    ) -> trace_service_pb2.ExportTraceServiceResponse:
        await _admit(self.receiver, context, "traces")
        try:
            views = decode_traces(request, self.receiver.limits)
        except Undecodable:
            await _invalid(self.receiver, context, "traces")
            raise  # unreachable: abort raises
        body = RequestBody("traces", False, request)
        outcome = await _ingest(self.receiver, context, body, views)
        response = trace_service_pb2.ExportTraceServiceResponse()
        if outcome.rejected:
            response.partial_success.rejected_spans = outcome.rejected
            response.partial_success.error_message = outcome.message
        return response


class LogsService:
    def __init__(self, receiver: Receiver) -> None:
        self.receiver = receiver

    async def Export(
        self, request: bytes, context: grpc.aio.ServicerContext
    ) -> logs_service_pb2.ExportLogsServiceResponse:
        await _admit(self.receiver, context, "logs")
        try:
            views = decode_logs(request, self.receiver.limits)
        except Undecodable:
            await _invalid(self.receiver, context, "logs")
            raise  # unreachable: abort raises
        body = RequestBody("logs", False, request)
        outcome = await _ingest(self.receiver, context, body, views)
        response = logs_service_pb2.ExportLogsServiceResponse()
        if outcome.rejected:
            response.partial_success.rejected_log_records = outcome.rejected
            response.partial_success.error_message = outcome.message
        return response


def _raw_export_handler(
    module: ModuleType, service: str, export: Callable
) -> grpc.GenericRpcHandler:
    """The generated service's `Export` method, but handed the undecoded request bytes."""
    full_name = module.DESCRIPTOR.services_by_name[service].full_name
    handler = grpc.unary_unary_rpc_method_handler(
        export,
        request_deserializer=None,  # raw bytes: decoded (and refused) inside the servicer
        response_serializer=lambda response: response.SerializeToString(),
    )
    return grpc.method_handlers_generic_handler(full_name, {"Export": handler})


def create_grpc_server(receiver: Receiver, host: str, port: int) -> tuple[grpc.aio.Server, int]:
    """Build the server and bind it; returns the server and the bound port."""
    limit = receiver.config.max_decompressed_bytes
    server = grpc.aio.server(
        options=[
            ("grpc.max_receive_message_length", limit),
            ("grpc.max_send_message_length", 4 * 1024 * 1024),
        ]
    )
    server.add_generic_rpc_handlers(
        (
            _raw_export_handler(trace_service_pb2, "TraceService", TraceService(receiver).Export),
            _raw_export_handler(logs_service_pb2, "LogsService", LogsService(receiver).Export),
        )
    )
    bound = server.add_insecure_port(f"{host}:{port}")
    if bound == 0:
        raise OSError(f"cannot bind OTLP/gRPC to {host}:{port}")
    return server, bound
