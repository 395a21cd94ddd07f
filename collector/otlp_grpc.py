"""OTLP/gRPC receiver: TraceService and LogsService on the same asyncio loop as HTTP.

gRPC itself enforces the message size cap (after decompression) and answers RESOURCE_EXHAUSTED.
Overload is UNAVAILABLE, which OTLP clients retry with backoff; a wrong token is UNAUTHENTICATED.
"""

from __future__ import annotations

import grpc
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2, logs_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc

from collector.otlp_proto import logs_request_to_views, trace_request_to_views
from collector.receiver import Receiver

TRANSPORT = "grpc"


async def _admit(receiver: Receiver, context: grpc.aio.ServicerContext, signal: str) -> None:
    metadata = dict(context.invocation_metadata() or ())
    if not receiver.authorized(metadata.get("authorization")):
        receiver.reject_request(TRANSPORT, signal, "unauthorized")
        await context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or invalid bearer token")
    if receiver.overloaded():
        receiver.reject_request(TRANSPORT, signal, "overloaded")
        await context.abort(grpc.StatusCode.UNAVAILABLE, "pipeline saturated; retry later")


class TraceService(trace_service_pb2_grpc.TraceServiceServicer):
    def __init__(self, receiver: Receiver) -> None:
        self.receiver = receiver

    async def Export(self, request, context):
        await _admit(self.receiver, context, "traces")
        outcome = self.receiver.ingest_spans(
            TRANSPORT, trace_request_to_views(request, self.receiver.limits)
        )
        response = trace_service_pb2.ExportTraceServiceResponse()
        if outcome.rejected:
            response.partial_success.rejected_spans = outcome.rejected
            response.partial_success.error_message = outcome.message
        return response


class LogsService(logs_service_pb2_grpc.LogsServiceServicer):
    def __init__(self, receiver: Receiver) -> None:
        self.receiver = receiver

    async def Export(self, request, context):
        await _admit(self.receiver, context, "logs")
        outcome = self.receiver.ingest_logs(
            TRANSPORT, logs_request_to_views(request, self.receiver.limits)
        )
        response = logs_service_pb2.ExportLogsServiceResponse()
        if outcome.rejected:
            response.partial_success.rejected_log_records = outcome.rejected
            response.partial_success.error_message = outcome.message
        return response


def create_grpc_server(receiver: Receiver, host: str, port: int) -> tuple[grpc.aio.Server, int]:
    """Build the server and bind it; returns the server and the bound port."""
    limit = receiver.config.max_decompressed_bytes
    server = grpc.aio.server(
        options=[
            ("grpc.max_receive_message_length", limit),
            ("grpc.max_send_message_length", 4 * 1024 * 1024),
        ]
    )
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(TraceService(receiver), server)
    logs_service_pb2_grpc.add_LogsServiceServicer_to_server(LogsService(receiver), server)
    bound = server.add_insecure_port(f"{host}:{port}")
    if bound == 0:
        raise OSError(f"cannot bind OTLP/gRPC to {host}:{port}")
    return server, bound
