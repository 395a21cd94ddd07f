"""The HTTP servers a role runs (OTLP/HTTP, ops): uvicorn on sockets turnwatch binds itself."""

from __future__ import annotations

import contextlib
import socket
from dataclasses import dataclass

import uvicorn


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
    sock.listen(1024)
    sock.setblocking(False)
    return sock


def http_server(app) -> Server:
    config = uvicorn.Config(
        app, log_config=None, access_log=False, lifespan="off", timeout_graceful_shutdown=5
    )
    return Server(config)
