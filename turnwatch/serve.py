"""Role wiring: build the pipeline, bind the servers, run until asked to stop, then drain."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

import uvicorn
from prometheus_client import CollectorRegistry

from collector.deid.stage import build_deidentifying_sink
from collector.metrics import CollectorMetrics
from collector.otlp_grpc import create_grpc_server
from collector.otlp_http import create_otlp_app
from collector.pipeline import CollectorPipeline, LoggingSink, SessionSink
from collector.receiver import Receiver
from exporters.ops import create_ops_app
from turnwatch.config import Settings

log = logging.getLogger("turnwatch.serve")


class _Server(uvicorn.Server):
    """uvicorn without its own signal handling: turnwatch owns shutdown for all its servers."""

    @contextlib.contextmanager
    def capture_signals(self):
        yield


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(1024)
    sock.setblocking(False)
    return sock


def _http_server(app, sock: socket.socket) -> tuple[_Server, socket.socket]:
    config = uvicorn.Config(
        app, log_config=None, access_log=False, lifespan="off", timeout_graceful_shutdown=5
    )
    return _Server(config), sock


@dataclass
class Ports:
    otlp_http: int = 0
    otlp_grpc: int = 0
    ops: int = 0


@dataclass
class Service:
    """A running `turnwatch serve`: its bound ports, registry and pipeline."""

    settings: Settings
    registry: CollectorRegistry
    pipeline: CollectorPipeline
    ports: Ports = field(default_factory=Ports)
    started: asyncio.Event = field(default_factory=asyncio.Event)


GC_THRESHOLDS = (50_000, 20, 20)
"""Buffered sessions keep millions of small objects alive; with CPython's default first threshold
(700 allocations) the collector rescans them so often that it costs a third of ingest CPU. The
objects form no cycles in the steady state, so collecting rarely loses nothing."""


def tune_garbage_collector() -> None:
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


async def serve(
    settings: Settings,
    stop: asyncio.Event,
    sink: SessionSink | None = None,
    on_started: Callable[[Service], None] | None = None,
    deidentify: bool = True,
) -> None:
    """Run all roles in this process until `stop` is set; drain open sessions on the way out.

    `sink` is the stage after de-identification (by default one that logs counts). Only tests of
    the collector's own assembly pass `deidentify=False`, to see raw sessions.
    """
    tune_garbage_collector()
    registry = CollectorRegistry()
    metrics = CollectorMetrics(registry)
    next_stage: SessionSink = sink or LoggingSink()
    deid_sink = None
    if deidentify:
        # Fails here, before a port is bound, on a missing key (production) or spaCy model.
        deid_sink = build_deidentifying_sink(
            settings.deid, settings.mode, settings.data_dir, registry, next_stage
        )
        next_stage = deid_sink
    pipeline = CollectorPipeline(settings, metrics, next_stage)
    receiver = Receiver(settings.otlp, pipeline, metrics)
    ports = Ports()

    otlp_sock = _bind(settings.otlp.host, settings.otlp.http_port)
    ops_sock = _bind(settings.ops.host, settings.ops.port)
    ports.otlp_http = otlp_sock.getsockname()[1]
    ports.ops = ops_sock.getsockname()[1]
    otlp_server, _ = _http_server(create_otlp_app(receiver), otlp_sock)
    checks = {"pipeline": lambda: "handoff queue saturated" if pipeline.overloaded() else None}
    ops_server, _ = _http_server(create_ops_app(registry, checks), ops_sock)

    grpc_server = None
    if settings.otlp.grpc_enabled:
        grpc_server, ports.otlp_grpc = create_grpc_server(
            receiver, settings.otlp.host, settings.otlp.grpc_port
        )
        await grpc_server.start()

    tasks = [
        asyncio.create_task(otlp_server.serve(sockets=[otlp_sock]), name="otlp-http"),
        asyncio.create_task(ops_server.serve(sockets=[ops_sock]), name="ops"),
        asyncio.create_task(pipeline.run_sweeper(), name="sweeper"),
        asyncio.create_task(pipeline.run_handoff(), name="handoff"),
    ]
    while not (otlp_server.started and ops_server.started):
        await asyncio.sleep(0.01)
    log.info(
        "turnwatch serving",
        extra={
            "otlp_http_port": ports.otlp_http,
            "otlp_grpc_port": ports.otlp_grpc,
            "ops_port": ports.ops,
            "mode": settings.mode,
        },
    )
    if on_started is not None:
        on_started(Service(settings, registry, pipeline, ports))
    await stop.wait()

    log.info("turnwatch stopping: draining open sessions")
    if grpc_server is not None:
        await grpc_server.stop(grace=2)
    otlp_server.should_exit = True
    await tasks[0]
    try:
        await asyncio.wait_for(pipeline.drain(), timeout=10)
    except TimeoutError:
        log.warning("drain timed out", extra={"queued": pipeline.queue.qsize()})
    ops_server.should_exit = True
    await tasks[1]
    for task in tasks[2:]:
        task.cancel()
    await asyncio.gather(*tasks[2:], return_exceptions=True)
    if deid_sink is not None:
        deid_sink.close()
    log.info("turnwatch stopped")


class BackgroundService:
    """`serve` on its own event loop thread, for tests and the demo."""

    def __init__(
        self, settings: Settings, sink: SessionSink | None = None, deidentify: bool = True
    ) -> None:
        self.settings = settings
        self.sink = sink
        self.deidentify = deidentify
        self.service: Service | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="turnwatch-serve", daemon=True)

    def _run(self) -> None:
        async def main() -> None:
            self._loop = asyncio.get_running_loop()
            self._stop = asyncio.Event()
            await serve(
                self.settings,
                self._stop,
                self.sink,
                on_started=self._on_started,
                deidentify=self.deidentify,
            )

        try:
            asyncio.run(main())
        except BaseException as exc:
            self._error = exc
            self._ready.set()

    def _on_started(self, service: Service) -> None:
        self.service = service
        self._ready.set()

    def start(self, timeout: float = 20) -> Service:
        self._thread.start()
        if not self._ready.wait(timeout) or self.service is None:
            raise RuntimeError(f"turnwatch did not start: {self._error!r}")
        return self.service

    def call(self, function, *args):
        """Run a function on the service's loop (pipeline state is loop-confined) and wait."""
        assert self._loop is not None

        async def invoke():
            return function(*args)

        return asyncio.run_coroutine_threadsafe(invoke(), self._loop).result(10)

    def stop(self, timeout: float = 30) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(timeout)
