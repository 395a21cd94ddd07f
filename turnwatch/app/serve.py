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
from typing import Literal

import uvicorn
from prometheus_client import CollectorRegistry
from turnwatch.collector.metrics import CollectorMetrics
from turnwatch.collector.otlp_grpc import create_grpc_server
from turnwatch.collector.otlp_http import create_otlp_app
from turnwatch.collector.pipeline import CollectorPipeline, SessionSink
from turnwatch.collector.receiver import Receiver
from turnwatch.exporters.ops import ReadinessCheck, create_ops_app
from turnwatch.exporters.regressions.api import include_incidents_api
from turnwatch.exporters.regressions.handler import chain

from turnwatch.app.roles import (
    BusSink,
    Exporters,
    build_bus,
    build_exporters,
    build_scorer_processor,
    exporter_handler,
    scorer_handler,
)
from turnwatch.app.settings import Settings
from turnwatch.bus.base import Bus
from turnwatch.bus.metrics import BusMetrics
from turnwatch.bus.plugins import RecordHandler, SessionProcessor, load_callable
from turnwatch.bus.records import INCIDENTS, SCORES, SESSIONS

log = logging.getLogger("turnwatch.serve")

Role = Literal["all", "collector", "scorer", "exporter"]


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


def _http_server(app) -> _Server:
    config = uvicorn.Config(
        app, log_config=None, access_log=False, lifespan="off", timeout_graceful_shutdown=5
    )
    return _Server(config)


@dataclass
class Ports:
    otlp_http: int = 0
    otlp_grpc: int = 0
    ops: int = 0


@dataclass
class Service:
    """A running `turnwatch serve`: its role, bound ports, registry, pipeline and bus."""

    settings: Settings
    registry: CollectorRegistry
    pipeline: CollectorPipeline | None
    ports: Ports = field(default_factory=Ports)
    started: asyncio.Event = field(default_factory=asyncio.Event)
    role: Role = "all"
    bus: Bus | None = None


GC_THRESHOLDS = (50_000, 20, 20)
"""Buffered sessions keep millions of small objects alive; with CPython's default first threshold
(700 allocations) the collector rescans them so often that it costs a third of ingest CPU. The
objects form no cycles in the steady state, so collecting rarely loses nothing."""


def tune_garbage_collector() -> None:
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


@dataclass
class Plugins:
    """What the scorer and exporter roles run on each record (defaults: `bus.*` settings)."""

    scorer: SessionProcessor | None = None
    exporter: RecordHandler | None = None
    observer: RecordHandler | None = None
    """Runs after the exporter on each score and incident (the demo's summary reads them)."""


def _consumers(
    role: Role,
    settings: Settings,
    bus: Bus,
    plugins: Plugins,
    registry: CollectorRegistry,
    exporters: Exporters | None,
    stop: asyncio.Event,
) -> list[asyncio.Task[None]]:
    config = settings.bus
    tasks = []
    if role in ("all", "scorer"):
        processor = plugins.scorer or build_scorer_processor(settings, registry)
        handler = scorer_handler(processor)
        tasks.append(
            asyncio.create_task(
                bus.consume((SESSIONS,), config.kafka.scorer_group, handler, stop), name="scorer"
            )
        )
    if role in ("all", "exporter") and exporters is not None:
        chosen = plugins.exporter or (
            load_callable(config.exporter_handler) if config.exporter_handler else None
        )
        handler = chosen or exporters.handler
        if plugins.observer is not None:
            handler = chain(handler, plugins.observer)
        exporter = exporter_handler(handler)
        consume = bus.consume((SCORES, INCIDENTS), config.kafka.exporter_group, exporter, stop)
        tasks.append(asyncio.create_task(consume, name="exporter"))
    for task in tasks:
        task.add_done_callback(lambda done: _report_consumer_exit(done, stop))
    return tasks


def _report_consumer_exit(task: asyncio.Task[None], stop: asyncio.Event) -> None:
    """A consumer that ends before shutdown stalls its stage while /healthz still says ok:
    say so loudly (its records stay unacknowledged on the bus, so nothing is lost)."""
    if stop.is_set() or task.cancelled():
        return
    error = task.exception()
    log.error(
        "bus consumer stopped unexpectedly; its stage is not processing",
        extra={"consumer": task.get_name(), "error": type(error).__name__ if error else None},
    )


async def serve(
    settings: Settings,
    stop: asyncio.Event,
    sink: SessionSink | None = None,
    on_started: Callable[[Service], None] | None = None,
    deidentify: bool = True,
    role: Role = "all",
    plugins: Plugins | None = None,
) -> None:
    """Run one role (or all) in this process until `stop` is set; drain on the way out.

    `sink`, when given, replaces the bus as the stage after de-identification (collector tests);
    otherwise sessions go onto the bus: Kafka when `bus.kafka.bootstrap` is set, else embedded.
    Only tests of the collector's own assembly pass `deidentify=False`, to see raw sessions.
    """
    tune_garbage_collector()
    plugins = plugins or Plugins()
    registry = CollectorRegistry()
    bus: Bus | None = None
    if sink is None or role != "all":
        bus = build_bus(settings.bus, BusMetrics(registry), settings.data_dir)
    collects = role in ("all", "collector")
    pipeline = None
    deid_sink = None
    checks: dict[str, ReadinessCheck] = {}
    if collects:
        metrics = CollectorMetrics(registry)
        next_stage: SessionSink = sink or BusSink(_required(bus))
        if deidentify:
            # Imported here: Presidio and spaCy take seconds to load, and only collectors need them.
            from turnwatch.collector.deid.stage import build_deidentifying_sink

            # Fails here, before a port is bound, on a missing key (production) or spaCy model.
            deid_sink = build_deidentifying_sink(
                settings.deid, settings.mode, settings.data_dir, registry, next_stage
            )
            next_stage = deid_sink
        pipeline = CollectorPipeline(settings.collector, metrics, next_stage)
        watched = pipeline
        checks["pipeline"] = lambda: "handoff queue saturated" if watched.overloaded() else None
    if bus is not None:
        checks["bus"] = bus.readiness
        await bus.start()
    ports = Ports()
    ops_sock = _bind(settings.ops.host, settings.ops.port)
    ports.ops = ops_sock.getsockname()[1]
    exporters = None
    ops_app = create_ops_app(registry, checks)
    if bus is not None and role in ("all", "exporter"):
        exporters = build_exporters(settings, registry)
        include_incidents_api(ops_app, exporters.store, settings.regressions.api_token)
    ops_server = _http_server(ops_app)
    ops_task = asyncio.create_task(ops_server.serve(sockets=[ops_sock]), name="ops")
    collector = None
    if pipeline is not None:
        collector = await _start_collector(settings, pipeline, ports)
    consumers_stop = asyncio.Event()
    consumers = (
        _consumers(role, settings, bus, plugins, registry, exporters, consumers_stop) if bus else []
    )
    while not (ops_server.started and (collector is None or collector.started)):
        await asyncio.sleep(0.01)
    log.info(
        "turnwatch serving",
        extra={
            "role": role,
            "otlp_http_port": ports.otlp_http,
            "otlp_grpc_port": ports.otlp_grpc,
            "ops_port": ports.ops,
            "mode": settings.mode,
            "bus": "kafka" if settings.bus.kafka.bootstrap else "embedded",
        },
    )
    if on_started is not None:
        on_started(Service(settings, registry, pipeline, ports, role=role, bus=bus))
    await stop.wait()

    log.info("turnwatch stopping: draining open sessions", extra={"role": role})
    if collector is not None and pipeline is not None:
        await collector.stop(pipeline)
    if bus is not None:
        # Embedded: let the scorer and exporter catch up; Kafka: let the spool reach the broker
        # (if it cannot, the spool keeps the records on disk for the next start).
        timeout = settings.bus.shutdown_timeout_seconds
        if not await bus.idle(timeout):
            log.warning("bus not drained at shutdown", extra={"role": role})
        consumers_stop.set()
        _done, late = await asyncio.wait(consumers, timeout=timeout) if consumers else ((), ())
        for task in late:
            # A record still in a handler is not acknowledged: it is delivered again later.
            task.cancel()
        await asyncio.gather(*consumers, return_exceptions=True)
        await bus.close()
    ops_server.should_exit = True
    await ops_task
    if deid_sink is not None:
        deid_sink.close()
    log.info("turnwatch stopped", extra={"role": role})


def _required(bus: Bus | None) -> Bus:
    assert bus is not None
    return bus


@dataclass
class _Collector:
    """The OTLP receivers and the pipeline's background tasks."""

    otlp_server: _Server
    grpc_server: object | None
    tasks: list[asyncio.Task[None]]

    @property
    def started(self) -> bool:
        return bool(self.otlp_server.started)

    async def stop(self, pipeline: CollectorPipeline) -> None:
        if self.grpc_server is not None:
            await self.grpc_server.stop(grace=2)  # type: ignore[attr-defined]
        self.otlp_server.should_exit = True
        await self.tasks[0]
        # Not wait_for: drain() swallows its own cancellation, so wait_for would return as if
        # it had finished and a timed-out drain would go unreported.
        drain = asyncio.create_task(pipeline.drain(), name="drain")
        finished, _ = await asyncio.wait({drain}, timeout=10)
        if not finished:
            # The single handoff task is stuck delivering one session (the next stage is full
            # and does not drain); the rest wait behind it. All of them are lost: say how many.
            lost = pipeline.queue.qsize() + 1
            pipeline.metrics.handoff_dropped.labels("shutdown").inc(lost)
            log.error("drain timed out; sessions lost at shutdown", extra={"lost_sessions": lost})
            drain.cancel()
            await asyncio.gather(drain, return_exceptions=True)
        for task in self.tasks[1:]:
            task.cancel()
        await asyncio.gather(*self.tasks[1:], return_exceptions=True)


async def _start_collector(
    settings: Settings, pipeline: CollectorPipeline, ports: Ports
) -> _Collector:
    receiver = Receiver(settings.otlp, pipeline, pipeline.metrics)
    otlp_sock = _bind(settings.otlp.host, settings.otlp.http_port)
    ports.otlp_http = otlp_sock.getsockname()[1]
    otlp_server = _http_server(create_otlp_app(receiver))
    grpc_server = None
    if settings.otlp.grpc_enabled:
        grpc_server, ports.otlp_grpc = create_grpc_server(
            receiver, settings.otlp.host, settings.otlp.grpc_port
        )
        await grpc_server.start()
    tasks = [
        asyncio.create_task(otlp_server.serve(sockets=[otlp_sock]), name="otlp-http"),
        asyncio.create_task(pipeline.run_sweeper(), name="sweeper"),
        asyncio.create_task(pipeline.run_handoff(), name="handoff"),
    ]
    return _Collector(otlp_server, grpc_server, tasks)


class BackgroundService:
    """`serve` on its own event loop thread, for tests and the demo."""

    def __init__(
        self,
        settings: Settings,
        sink: SessionSink | None = None,
        deidentify: bool = True,
        role: Role = "all",
        plugins: Plugins | None = None,
    ) -> None:
        self.settings = settings
        self.sink = sink
        self.deidentify = deidentify
        self.role: Role = role
        self.plugins = plugins
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
                role=self.role,
                plugins=self.plugins,
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
