"""OTLP/gRPC receiver: TraceService and LogsService on the same asyncio loop as HTTP, and a
MetricsService that answers and counts metric exports without decoding them (see otlp_http).

Overload, a full write-ahead log and a log write the disk refused are UNAVAILABLE, which OTLP
clients retry with backoff; a wrong token is UNAUTHENTICATED;
a body that is not an OTLP request is INVALID_ARGUMENT; a message past
`otlp.max_decompressed_bytes`, metadata past `otlp.max_header_bytes` or a request past the caps
on what it holds is RESOURCE_EXHAUSTED. Every refusal is counted by reason.

The services take the raw request bytes and decode them themselves (off the event loop, as
HTTP does): with the generated handlers, grpc decodes before the servicer runs, so garbage came
back as UNKNOWN (an internal-error code), was never counted, and was parsed before the token was
checked. And they are registered as client-streaming methods, which is the same on the wire as
unary: the servicer then runs before the message is read, so a message grpc refuses for its size
is seen (as a stream that ends without one) and counted, where a unary handler is never called.

Connections are bounded like HTTP's: at most `otlp.max_connections`, a handshake within
`otlp.header_timeout_seconds`, closed after `otlp.idle_timeout_seconds` without calls, pinged
every `otlp.grpc_keepalive_seconds` and dropped when a ping goes unanswered.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from types import ModuleType
from typing import Any

import grpc
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from turnwatch.collector.otlp_common import TooLarge, Undecodable
from turnwatch.collector.otlp_proto import decode_logs, decode_traces
from turnwatch.collector.receiver import Decoder, NotAccepted, Receiver, not_decoded
from turnwatch.collector.wal.requests import RequestBody

TRANSPORT = "grpc"
METADATA_TRANSPORT_FACTOR = 4
"""grpc's own metadata limit is set this many times above `otlp.max_header_bytes`, so that
metadata between the two reaches the servicer, which refuses and counts it; past grpc's limit
the call is cancelled before it can be counted as anything but `cancelled`."""


class _Export:
    """One Export method: admission, the message, decoding off the loop, the pipeline."""

    def __init__(self, receiver: Receiver, signal: str, decoder: Decoder) -> None:
        self.receiver = receiver
        self.signal = signal
        self.decoder = decoder
        self.max_metadata = receiver.config.max_header_bytes

    async def _refuse(
        self, context: grpc.aio.ServicerContext, code: grpc.StatusCode, reason: str, message: str
    ) -> None:
        self.receiver.reject_request(TRANSPORT, self.signal, reason)
        await context.abort(code, message)

    async def _admit(self, context: grpc.aio.ServicerContext) -> None:
        pairs = context.invocation_metadata() or ()
        size = sum(len(key) + len(value) for key, value in pairs)
        if size > self.max_metadata:
            await self._refuse(
                context,
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                "headers_too_large",
                f"metadata exceeds {self.max_metadata} bytes",
            )
        metadata = dict(pairs)
        receiver = self.receiver
        if not receiver.authorized(metadata.get("authorization")):
            await self._refuse(
                context,
                grpc.StatusCode.UNAUTHENTICATED,
                "unauthorized",
                "missing or invalid bearer token",
            )
        if overload := receiver.overloaded():
            await self._refuse(
                context,
                grpc.StatusCode.UNAVAILABLE,
                overload,
                "pipeline saturated; retry later",
            )
        if receiver.saturated():
            await self._refuse(
                context,
                grpc.StatusCode.UNAVAILABLE,
                "too_many_requests",
                "too many requests at once; retry later",
            )

    async def _message(self, context: grpc.aio.ServicerContext) -> bytes:
        try:
            message = await context.read()
        except asyncio.CancelledError:
            self.receiver.reject_request(TRANSPORT, self.signal, "cancelled")
            raise
        if message is grpc.aio.EOF:
            # A unary client always sends its one message: grpc refused it for its size (the
            # client has RESOURCE_EXHAUSTED already) or the client went away.
            self.receiver.reject_request(TRANSPORT, self.signal, "too_large")
            await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, "message too large")
        return message

    async def export(
        self, requests: AsyncIterator[bytes], context: grpc.aio.ServicerContext
    ) -> Any:
        await self._admit(context)
        receiver = self.receiver
        try:
            with receiver.in_flight():
                message = await self._message(context)
                decoded = await receiver.decode(self.decoder, [message], "", self.signal)
        except Undecodable:
            await self._refuse(
                context,
                grpc.StatusCode.INVALID_ARGUMENT,
                "undecodable",
                f"body is not an OTLP {self.signal} request",
            )
            raise  # unreachable: abort raises
        except TooLarge as exc:
            await self._refuse(context, grpc.StatusCode.RESOURCE_EXHAUSTED, exc.reason, str(exc))
            raise  # unreachable: abort raises
        if self.signal == "metrics":
            receiver.ignore_request(TRANSPORT, self.signal)  # never logged ahead nor ingested
            return metrics_service_pb2.ExportMetricsServiceResponse()
        body = RequestBody(self.signal, False, decoded.body)
        try:
            outcome = await receiver.ingest(TRANSPORT, body, decoded.result)
        except NotAccepted as exc:
            await self._refuse(
                context, grpc.StatusCode.UNAVAILABLE, exc.reason, "cannot store it; retry later"
            )
            raise  # unreachable: abort raises
        if self.signal == "traces":
            response: Any = trace_service_pb2.ExportTraceServiceResponse()
            if outcome.rejected:
                response.partial_success.rejected_spans = outcome.rejected
                response.partial_success.error_message = outcome.message
            return response
        response = logs_service_pb2.ExportLogsServiceResponse()
        if outcome.rejected:
            response.partial_success.rejected_log_records = outcome.rejected
            response.partial_success.error_message = outcome.message
        return response


def _raw_export_handler(
    module: ModuleType, service: str, export: Callable
) -> grpc.GenericRpcHandler:
    """The generated service's `Export` method, handed the undecoded request bytes."""
    full_name = module.DESCRIPTOR.services_by_name[service].full_name
    handler = grpc.stream_unary_rpc_method_handler(
        export,
        request_deserializer=None,  # raw bytes: decoded (and refused) inside the servicer
        response_serializer=lambda response: response.SerializeToString(),
    )
    return grpc.method_handlers_generic_handler(full_name, {"Export": handler})


def server_options(receiver: Receiver) -> list[tuple[str, int]]:
    config = receiver.config
    metadata = config.max_header_bytes * METADATA_TRANSPORT_FACTOR
    return [
        ("grpc.max_receive_message_length", config.max_decompressed_bytes),
        ("grpc.max_send_message_length", 4 * 1024 * 1024),
        ("grpc.max_metadata_size", metadata),
        ("grpc.absolute_max_metadata_size", metadata),
        ("grpc.max_concurrent_streams", config.grpc_max_concurrent_streams),
        ("grpc.max_allowed_incoming_connections", config.max_connections),
        ("grpc.server_handshake_timeout_ms", int(config.header_timeout_seconds * 1000)),
        ("grpc.max_connection_idle_ms", int(config.idle_timeout_seconds * 1000)),
        ("grpc.keepalive_time_ms", int(config.grpc_keepalive_seconds * 1000)),
        ("grpc.keepalive_timeout_ms", int(config.grpc_keepalive_timeout_seconds * 1000)),
    ]


def create_grpc_server(receiver: Receiver, host: str, port: int) -> tuple[grpc.aio.Server, int]:
    """Build the server and bind it; returns the server and the bound port."""
    server = grpc.aio.server(options=server_options(receiver))
    server.add_generic_rpc_handlers(
        (
            _raw_export_handler(
                trace_service_pb2, "TraceService", _Export(receiver, "traces", decode_traces).export
            ),
            _raw_export_handler(
                logs_service_pb2, "LogsService", _Export(receiver, "logs", decode_logs).export
            ),
            _raw_export_handler(
                metrics_service_pb2,
                "MetricsService",
                _Export(receiver, "metrics", not_decoded).export,
            ),
        )
    )
    bound = server.add_insecure_port(f"{host}:{port}")
    if bound == 0:
        raise OSError(f"cannot bind OTLP/gRPC to {host}:{port}")
    return server, bound
