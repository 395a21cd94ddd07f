"""Running roles: start the servers and consumers the roles need, run until asked to stop, drain.

`serve` runs what `turnwatch serve --role` composes (`build_roles`); `run` is the same lifecycle
for any composition (the demo adds a record tap to the exporter; tests put a capturing stage
after the collector). Both return how many accepted sessions and records the shutdown dropped
(counted in metrics too), so `turnwatch serve` can exit non-zero when it lost anything.
"""

from __future__ import annotations

import asyncio
import functools
import gc
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry

from turnwatch.app.context import ServiceContext
from turnwatch.app.http import OpsRejections, Ports, Server, bind, fit_connections, http_server
from turnwatch.app.roles import Consumer, Role, Roles, build_roles
from turnwatch.app.settings import Settings
from turnwatch.bus.base import Bus
from turnwatch.collector.pipeline import CollectorPipeline
from turnwatch.exporters.ops import ReadinessCheck, create_ops_app
from turnwatch.private import private_directory

log = logging.getLogger("turnwatch.serve")

Compose = Callable[[ServiceContext], Roles]
"""Builds what one process runs from its context (`build_roles` for `turnwatch serve`)."""


@dataclass
class Service:
    """A running service: its role, bound ports, registry, pipeline and bus."""

    settings: Settings
    registry: CollectorRegistry
    pipeline: CollectorPipeline | None
    ports: Ports = field(default_factory=Ports)
    started: asyncio.Event = field(default_factory=asyncio.Event)
    role: str = "all"
    bus: Bus | None = None


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
    on_started: Callable[[Service], None] | None = None,
    role: Role = "all",
) -> int:
    """Run one role (or all) in this process until `stop` is set; drain on the way out; return
    what the shutdown dropped.

    Sessions go onto the bus: Kafka when `bus.kafka.bootstrap` is set, else embedded."""
    return await run(settings, functools.partial(build_roles, role=role), stop, on_started)


async def run(
    settings: Settings,
    compose: Compose,
    stop: asyncio.Event,
    on_started: Callable[[Service], None] | None = None,
) -> int:
    """Run the roles `compose` builds until `stop` is set; drain on the way out; return how
    many accepted sessions (and embedded bus records) the shutdown dropped."""
    tune_garbage_collector()
    context = ServiceContext(fit_connections(settings))
    roles = compose(context)
    # The data directory holds the key, the spool, the quarantine and the cases: owner-only.
    private_directory(settings.data_dir)
    if roles.consumers:
        bus = context.bus()
        # Before anything is published: each group must see every record of its topics.
        for consumer in roles.consumers:
            bus.subscribe(consumer.topics, consumer.group)
    running = _Running(context, roles)
    await running.start()
    log.info("turnwatch serving", extra=running.described())
    if on_started is not None:
        on_started(running.service())
    await stop.wait()
    log.info("turnwatch stopping: draining open sessions", extra={"role": roles.name})
    dropped = await running.stop()
    log.info("turnwatch stopped", extra={"role": roles.name, "dropped_at_shutdown": dropped})
    return dropped


class _Running:
    """The servers and consumer tasks of one composition, in start and shutdown order."""

    def __init__(self, context: ServiceContext, roles: Roles) -> None:
        self.context = context
        self.roles = roles
        self.bus = context.built_bus
        self.ports = Ports()
        self.consumers_stop = asyncio.Event()
        self.consumers: list[asyncio.Task[None]] = []
        self.background: list[asyncio.Task[None]] = []
        self.ops_server: Server | None = None
        self.ops_task: asyncio.Task[None] | None = None

    def readiness(self) -> dict[str, ReadinessCheck]:
        checks = self.roles.collector.readiness() if self.roles.collector else {}
        if self.bus is not None:
            checks["bus"] = self.bus.readiness
        for consumer in self.roles.consumers:
            checks.update(consumer.readiness)
        return checks

    async def start(self) -> None:
        checks = self.readiness()
        if self.bus is not None:
            await self.bus.start()
        self._start_ops(checks)
        collector = self.roles.collector
        if collector is not None:
            await collector.start(self.ports)
        if self.bus is not None:
            self.consumers = [self._consume(self.bus, role) for role in self.roles.consumers]
        self.background = [
            asyncio.create_task(work(), name=f"{role.name}-{work.__name__}")
            for role in self.roles.consumers
            for work in role.background
        ]
        assert self.ops_server is not None
        while not (self.ops_server.started and (collector is None or collector.started)):
            await asyncio.sleep(0.01)

    def _start_ops(self, checks: dict[str, ReadinessCheck]) -> None:
        ops = self.context.settings.ops
        sock = bind(ops.host, ops.port, "the ops port", "--ops-port")
        self.ports.ops = sock.getsockname()[1]
        app = create_ops_app(self.context.registry, checks)
        for consumer in self.roles.consumers:
            if consumer.mount is not None:
                consumer.mount(app)
        self.ops_server = http_server(app, ops, OpsRejections(self.context.registry))
        self.ops_task = asyncio.create_task(self.ops_server.serve(sockets=[sock]), name="ops")

    def _consume(self, bus: Bus, role: Consumer) -> asyncio.Task[None]:
        consume = bus.consume(
            role.topics, role.group, role.handler, self.consumers_stop, ledger=role.ledger
        )
        task = asyncio.create_task(consume, name=role.name)
        task.add_done_callback(functools.partial(_report_consumer_exit, stop=self.consumers_stop))
        return task

    def described(self) -> dict[str, object]:
        settings = self.context.settings
        return {
            "role": self.roles.name,
            "otlp_http_port": self.ports.otlp_http,
            "otlp_grpc_port": self.ports.otlp_grpc,
            "ops_port": self.ports.ops,
            "mode": settings.mode,
            "bus": "kafka" if settings.bus.kafka.bootstrap else "embedded",
        }

    def service(self) -> Service:
        collector = self.roles.collector
        pipeline = collector.pipeline if collector is not None else None
        context = self.context
        return Service(
            context.settings,
            context.registry,
            pipeline,
            self.ports,
            role=self.roles.name,
            bus=self.bus,
        )

    async def stop(self) -> int:
        dropped = 0
        if self.roles.collector is not None:
            await self.roles.collector.stop()
            dropped += self.roles.collector.lost_at_shutdown
        if self.bus is not None:
            dropped += await self._stop_bus(self.bus)
        assert self.ops_server is not None and self.ops_task is not None
        self.ops_server.should_exit = True
        await self.ops_task
        if self.roles.collector is not None:
            self.roles.collector.close()
        for consumer in self.roles.consumers:
            if consumer.close is not None:
                consumer.close()
        return dropped

    async def _stop_bus(self, bus: Bus) -> int:
        # Embedded: let the scorer and exporter catch up; Kafka: let the spool reach the broker
        # (if it cannot, the spool keeps the records on disk for the next start).
        timeout = self.context.settings.bus.shutdown_timeout_seconds
        if not await bus.idle(timeout):
            log.warning("bus not drained at shutdown", extra={"role": self.roles.name})
        drains = [consumer.drain for consumer in self.roles.consumers if consumer.drain]
        for drain in drains:
            await drain(timeout)
        # What the drains published (judged score records) is consumed before consumers stop.
        if drains and not await bus.idle(timeout):
            log.warning("bus not drained at shutdown", extra={"role": self.roles.name})
        self.consumers_stop.set()
        if self.consumers:
            _done, late = await asyncio.wait(self.consumers, timeout=timeout)
            for task in late:
                # A record still in a handler is not acknowledged: it is delivered again later.
                task.cancel()
        await asyncio.gather(*self.consumers, return_exceptions=True)
        for task in self.background:
            task.cancel()
        await asyncio.gather(*self.background, return_exceptions=True)
        lost = await bus.close()
        if lost:
            log.error("embedded bus records lost at shutdown", extra={"lost_records": lost})
        return lost


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


class BackgroundService:
    """`run` on its own event loop thread, for tests and the demo."""

    def __init__(self, settings: Settings, compose: Compose = build_roles) -> None:
        self.settings = settings
        self.compose = compose
        self.service: Service | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self.dropped_at_shutdown: int | None = None
        self._thread = threading.Thread(target=self._run, name="turnwatch-serve", daemon=True)

    def _run(self) -> None:
        async def main() -> None:
            self._loop = asyncio.get_running_loop()
            self._stop = asyncio.Event()
            self.dropped_at_shutdown = await run(
                self.settings, self.compose, self._stop, on_started=self._on_started
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
