"""The limits every server turnwatch runs puts on its connections (the `otlp` and `ops` blocks
extend this): a client that connects and sends nothing, sends its headers a byte at a time or
never sends the body it announced holds a connection, and a file descriptor, for a bounded time
only; and there are never more connections than the process has descriptors for."""

from __future__ import annotations

from pydantic import Field

from turnwatch.section import Section

KiB = 1024


class ConnectionLimits(Section):
    max_connections: int = Field(
        default=512,
        ge=1,
        description="Open connections per server; past it the longest-idle one is closed, or "
        "the new one if none is idle. Lowered at start to fit the file-descriptor limit.",
    )
    header_timeout_seconds: float = Field(
        default=10.0,
        gt=0,
        description="Time for a request's line and headers (a new gRPC connection's handshake) "
        "to arrive once a connection opens or its first byte comes.",
    )
    idle_timeout_seconds: float = Field(
        default=30.0, gt=0, description="An idle keep-alive connection is closed after this."
    )
    max_header_bytes: int = Field(
        default=16 * KiB,
        ge=1 * KiB,
        description="Request line and headers (gRPC: metadata) past this are refused.",
    )
