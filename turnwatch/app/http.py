"""The HTTP servers a role runs (OTLP/HTTP, ops): uvicorn on sockets turnwatch binds itself, each
with bounded connections (the `ConnectionLimits` of its block).

uvicorn alone keeps a connection that sends nothing, or sends its headers a byte at a time,
forever, and takes every connection the kernel hands it; 1,100 idle connections used up a
1,024-descriptor limit and took `/healthz` and OTLP down. Here each server's protocol:

- closes a connection whose request line and headers have not come `header_timeout_seconds`
  after it opened or after its first byte (a keep-alive connection idles `idle_timeout_seconds`
  before that, uvicorn's keep-alive timeout);
- holds at most `max_connections`: past it the longest-idle connection (no request in progress:
  a slow or silent client) is closed for the new one, so a flood of idle connections cannot
  lock clients out; with none idle the new connection is closed;
- refuses headers past `max_header_bytes` (h11's limit; h11 is used rather than httptools, which
  has none) and counts every refusal before the application, parser errors included, by reason.

`fit_connections` raises the soft file-descriptor limit to the hard one at start and lowers the
connection caps to fit below it. The body deadline is the OTLP receiver's (otlp_http.py): it
answers 400 when a body does not arrive in time.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import resource
import socket
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import uvicorn
from prometheus_client import CollectorRegistry, Counter
from uvicorn.protocols.http.h11_impl import H11Protocol

from turnwatch.app.settings import Settings
from turnwatch.logs import RateLimitedLog
from turnwatch.serving import ConnectionLimits

log = logging.getLogger("turnwatch.http")

ACCEPT_BACKLOG = 64
"""Listen backlog, which is also how many connections asyncio accepts in one go before any is
seen (and possibly closed) here: part of the descriptor budget."""
RESERVED_DESCRIPTORS = 128
"""Descriptors kept for everything but connections: files, the spool, the broker, threads' pipes."""


@dataclass
class Ports:
    """The bound ports (the asked-for ones, or what the system picked for 0)."""

    otlp_http: int = 0
    otlp_grpc: int = 0
    ops: int = 0


class Server(uvicorn.Server):
    """uvicorn without its own signal handling: turnwatch owns shutdown for all its servers."""

    @contextlib.contextmanager
    def capture_signals(self):
        yield


def bind(host: str, port: int, purpose: str, flag: str) -> socket.socket:
    """A listening socket for `purpose` (its port set by `flag`); a failure names both, since
    "Address already in use" alone does not say which of three ports is taken."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # asyncio turns on TCP_NODELAY for accepted connections only when the listening socket names
    # its protocol; without it every small response waits ~40 ms for Nagle and delayed ACKs.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise OSError(
            exc.errno,
            f"cannot bind {purpose} to {host}:{port}: {exc.strerror or exc} "
            f"(choose another with {flag}, or 0 for any free port)",
        ) from None
    sock.listen(ACCEPT_BACKLOG)
    sock.setblocking(False)
    return sock


Rejections = Callable[[str], None]
"""Counts one refusal before the application, by reason (and logs it, rate-limited)."""


class ConnectionGuard:
    """One server's open connections, oldest first, and what happens past its cap."""

    def __init__(self, max_connections: int, header_timeout: float, reject: Rejections) -> None:
        self.max_connections = max_connections
        self.header_timeout = header_timeout
        self.reject = reject
        self.open: dict[LimitedH11Protocol, None] = {}
        self.uvicorn_logger = _ClientWarnings(logging.getLogger("uvicorn.error"))

    def admit(self, protocol: LimitedH11Protocol) -> bool:
        if len(self.open) >= self.max_connections:
            idle = next((held for held in self.open if held.idle()), None)
            if idle is None:
                self.reject("too_many_connections")
                return False
            self.reject("connection_evicted")
            self.release(idle)
            idle.transport.close()
        self.open[protocol] = None
        return True

    def release(self, protocol: LimitedH11Protocol) -> None:
        self.open.pop(protocol, None)


class _ClientWarnings(logging.LoggerAdapter):
    """uvicorn's logger for a connection: its warnings are about what clients send (an invalid
    request, the concurrency limit), so they are rate-limited; errors stay errors."""

    def __init__(self, logger: logging.Logger) -> None:
        super().__init__(logger, {})
        self._warnings = RateLimitedLog(log)

    @property
    def level(self) -> int:
        return self.logger.level

    def warning(self, msg: object, *args: Any, **kwargs: Any) -> None:
        self._warnings.warning("http server warning", str(msg))


class LimitedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a header deadline and a place under its server's cap."""

    def __init__(self, *args: Any, guard: ConnectionGuard, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.guard = guard
        self.logger = guard.uvicorn_logger  # type: ignore[assignment]
        self._deadline: asyncio.TimerHandle | None = None

    def idle(self) -> bool:
        """No request in progress: before the first, or between keep-alive requests."""
        return self.cycle is None or self.cycle.response_complete

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        if not self.guard.admit(self):
            self.transport = transport
            transport.abort()
            return
        super().connection_made(transport)
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        self.guard.release(self)
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._deadline is None and self.idle():
            self._arm()  # a request begins: its headers have header_timeout to arrive
        super().data_received(data)
        if not self.idle():
            self._disarm()

    def send_400_response(self, msg: str) -> None:
        self.guard.reject("malformed_http")  # h11 refused the request line or headers
        super().send_400_response(msg)

    def _arm(self) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(self.guard.header_timeout, self._headers_late)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _headers_late(self) -> None:
        self._deadline = None
        if self.idle() and not self.transport.is_closing():
            self.guard.reject("header_timeout")
            self.guard.release(self)
            self.transport.close()


def http_server(app: Any, limits: ConnectionLimits, reject: Rejections) -> Server:
    guard = ConnectionGuard(limits.max_connections, limits.header_timeout_seconds, reject)
    config = uvicorn.Config(
        app,
        log_config=None,
        access_log=False,
        lifespan="off",
        timeout_graceful_shutdown=5,
        http=functools.partial(LimitedH11Protocol, guard=guard),  # type: ignore[arg-type]
        h11_max_incomplete_event_size=limits.max_header_bytes,
        timeout_keep_alive=max(1, round(limits.idle_timeout_seconds)),
        # uvicorn's own cap on connections and running requests (503 past it), a backstop for
        # requests still running after their connection went: the guard caps connections.
        limit_concurrency=2 * limits.max_connections,
        backlog=ACCEPT_BACKLOG,
    )
    return Server(config)


class OpsRejections:
    """The ops server's refusals before its application, by reason."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.counter = Counter(
            "turnwatch_ops_requests_rejected_total",
            "Connections and requests the ops server refused before answering, by reason.",
            ["reason"],
            registry=registry,
        )
        self._warnings = RateLimitedLog(log)

    def __call__(self, reason: str) -> None:
        self.counter.labels(reason).inc()
        self._warnings.warning("ops request refused", reason)


def fit_connections(settings: Settings) -> Settings:
    """Raise the soft descriptor limit to the hard one, then lower the connection caps so that
    every server at its cap, asyncio's accept bursts and RESERVED_DESCRIPTORS fit under it."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        wanted = 1_048_576 if hard == resource.RLIM_INFINITY else hard
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
            soft = wanted
    otlp, ops = settings.otlp, settings.ops
    receivers = 2 if otlp.grpc_enabled else 1  # otlp.max_connections holds for each
    wanted = ops.max_connections + receivers * otlp.max_connections
    budget = soft - RESERVED_DESCRIPTORS - ACCEPT_BACKLOG * 2
    if wanted <= budget:
        return settings
    scale = max(budget, 1 + receivers) / wanted
    fitted_otlp = max(1, int(otlp.max_connections * scale))
    fitted_ops = max(1, int(ops.max_connections * scale))
    log.warning(
        "connection caps lowered to fit the file-descriptor limit",
        extra={
            "descriptor_limit": soft,
            "otlp_max_connections": fitted_otlp,
            "ops_max_connections": fitted_ops,
        },
    )
    return settings.model_copy(
        update={
            "otlp": otlp.model_copy(update={"max_connections": fitted_otlp}),
            "ops": ops.model_copy(update={"max_connections": fitted_ops}),
        }
    )
