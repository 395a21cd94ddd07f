"""The collector role: OTLP receivers -> pipeline -> handoff -> de-identification -> the bus.

`build_collector` is how `turnwatch serve` composes it, always with de-identification in front of
the output. `CollectorRole` itself takes whatever next stage it is given: a test that wants the raw
sessions composes one in front of a capturing stage. With `routing.mode: route` the collector
only decodes and routes sealed observations to the sessionizer role (`sessionizer_role.py`); it
loads no Presidio, since nothing readable leaves it.

With `wal.enabled`, the role opens the write-ahead log before anything else, replays it before the
receivers bind their ports, and closes it last.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable

from turnwatch.app.context import ServiceContext
from turnwatch.app.exposure import check_collector
from turnwatch.app.http import Ports, Server, bind, http_server
from turnwatch.app.settings import ConfigError, Settings
from turnwatch.bus.base import Bus
from turnwatch.bus.records import SESSIONS, RecordTooLarge
from turnwatch.collector.deid.secret import load_secret, session_id_key
from turnwatch.collector.handoff import Handoff
from turnwatch.collector.observations import ObservationCodec
from turnwatch.collector.otlp_grpc import create_grpc_server
from turnwatch.collector.otlp_http import create_otlp_app
from turnwatch.collector.pipeline import (
    CollectorPipeline,
    HandedOn,
    LoggingSink,
    SessionBuilder,
    SessionSink,
)
from turnwatch.collector.receiver import Receiver
from turnwatch.collector.router import ObservationRouter
from turnwatch.collector.sealing import Sealer
from turnwatch.collector.wal.durability import Durability
from turnwatch.collector.wal.metrics import WalMetrics
from turnwatch.exporters.ops import ReadinessCheck
from turnwatch.schema import Session

log = logging.getLogger("turnwatch.serve")


class BusSink:
    """The collector's last stage: de-identified sessions onto `turnwatch.sessions`."""

    def __init__(self, bus: Bus) -> None:
        self.bus = bus
        self._log = LoggingSink()

    async def deliver(self, session: Session, handed_on: HandedOn | None = None) -> bool:
        try:
            await self.bus.publish(SESSIONS, session.session_id, session)
        except RecordTooLarge:
            return False  # counted as rejected by the bus
        return await self._log.deliver(session)


class CollectorRole:
    """The receivers, the pipeline and its handoff in front of `next_stage`."""

    def __init__(
        self,
        context: ServiceContext,
        next_stage: SessionSink,
        close: Callable[[], None] | None = None,
        sealer: Sealer | None = None,
        flush: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        """With a `sealer`, the collector routes observations to the bus instead of building
        sessions (its handoff then stays empty)."""
        settings = context.settings
        config = settings.collector
        metrics = context.collector_metrics()
        # Session ids are keyed with the deployment secret (SecretError here in production
        # without one), so they are stable across replicas and unlinkable without it.
        secret = load_secret(settings.deid, settings.mode, settings.data_dir)
        build = SessionBuilder(config.service_fallback, metrics, session_id_key(secret))
        self.wal = open_wal(context, secret) if config.wal.enabled else None
        self.handoff = Handoff(config.handoff, metrics, build, next_stage)
        self.router: ObservationRouter | None = None
        if sealer is not None:
            codec = ObservationCodec(sealer)
            self.router = ObservationRouter(config.routing, codec, metrics, context.bus().publish)
        self.pipeline = CollectorPipeline(
            config, metrics, self.handoff, wal=self.wal, router=self.router
        )
        self.otlp = settings.otlp
        self.drain_timeout = config.handoff.shutdown_timeout_seconds
        self.lost_at_shutdown = 0
        self._close = close
        self._flush = flush
        self._server: Server | None = None
        self._serving: asyncio.Task[None] | None = None
        self._grpc_server: object | None = None
        self._receiver: Receiver | None = None
        self._tasks: list[asyncio.Task[None]] = []

    def readiness(self) -> dict[str, ReadinessCheck]:
        overloaded = self.pipeline.overloaded
        checks: dict[str, ReadinessCheck] = {
            "pipeline": lambda: "handoff or routing queue saturated" if overloaded() else None
        }
        wal = self.wal
        if wal is not None:
            checks["wal"] = lambda: (
                "replaying the write-ahead log"
                if wal.replaying
                else "write-ahead log full"
                if wal.full
                else None
            )
        return checks

    @property
    def started(self) -> bool:
        return self._server is not None and bool(self._server.started)

    async def start(self, ports: Ports) -> None:
        receiver = self._receiver = Receiver(self.otlp, self.pipeline, self.pipeline.metrics)
        self._tasks = [asyncio.create_task(self.handoff.run(), name="handoff")]
        if self.wal is not None:
            self.wal.start()
            await self.wal.replay(self.pipeline, receiver.limits_for, self.handoff.overloaded)
        sock = bind(self.otlp.host, self.otlp.http_port, "OTLP/HTTP", "--otlp-port")
        ports.otlp_http = sock.getsockname()[1]
        self._server = http_server(
            create_otlp_app(receiver), self.otlp, functools.partial(receiver.reject, "http")
        )
        if self.otlp.grpc_enabled:
            grpc_server, ports.otlp_grpc = create_grpc_server(
                receiver, self.otlp.host, self.otlp.grpc_port
            )
            await grpc_server.start()
            self._grpc_server = grpc_server
        self._serving = asyncio.create_task(self._server.serve(sockets=[sock]), name="otlp-http")
        self._tasks.append(asyncio.create_task(self.pipeline.run_sweeper(), name="sweeper"))
        if self.router is not None:
            self._tasks.append(asyncio.create_task(self.router.run(), name="router"))

    async def stop(self) -> None:
        """Stop receiving, close every open session and wait for the next stage to take them."""
        if self._grpc_server is not None:
            await self._grpc_server.stop(grace=2)  # type: ignore[attr-defined]
        if self._server is not None and self._serving is not None:
            self._server.should_exit = True
            await self._serving
        if self._receiver is not None:
            self._receiver.close()
        self.pipeline.close_all()
        await self._drain()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self.wal is not None:
            await self.wal.close()

    async def _drain(self) -> None:
        # Not wait_for: drain() swallows its own cancellation, so wait_for would return as if
        # it had finished and a timed-out drain would go unreported.
        if self.router is not None:
            routed = asyncio.create_task(self.router.drain(), name="drain-router")
            if not (await asyncio.wait({routed}, timeout=self.drain_timeout))[0]:
                lost = self.router.queue.qsize()
                log.error("routing drain timed out", extra={"lost_records": lost})
                routed.cancel()
        drain = asyncio.create_task(self._drain_stages(), name="drain")
        finished, _ = await asyncio.wait({drain}, timeout=self.drain_timeout)
        if finished:
            return
        stranded = self.handoff.strand()
        self.lost_at_shutdown = stranded.lost
        if stranded.lost:
            log.error(
                "drain timed out; sessions lost at shutdown",
                extra={"lost_sessions": stranded.lost, "kept_sessions": stranded.kept},
            )
        else:
            log.warning(
                "drain timed out; the write-ahead log keeps the sessions for the next start",
                extra={"kept_sessions": stranded.kept},
            )
        drain.cancel()
        await asyncio.gather(drain, return_exceptions=True)

    async def _drain_stages(self) -> None:
        await self.handoff.drain()
        if self._flush is not None:
            await self._flush()

    def close(self) -> None:
        if self._close is not None:
            self._close()


def open_wal(context: ServiceContext, secret: bytes) -> Durability:
    """The write-ahead log, keyed with the deployment secret (it holds raw content)."""
    settings = context.settings
    directory = settings.wal.directory or settings.data_dir / "wal"
    return Durability(settings.wal, directory, secret, WalMetrics(context.registry))


def check_wal_fits(settings: Settings) -> None:
    """The log lets go of a session once the bus has it: an embedded bus in memory would then
    hold the only copy, and a crash would lose it after all."""
    in_memory = not settings.bus.kafka.bootstrap and not settings.bus.embedded.spool
    if settings.wal.enabled and in_memory:
        raise ConfigError(
            "wal.enabled needs a bus that keeps what it takes: set bus.embedded.spool: true "
            "(or use Kafka)"
        )
    if settings.wal.enabled and settings.routing.mode == "route":
        # A routing collector builds no sessions, so nothing would hold its frames until the
        # bus has the observations: the log would promise what it does not keep.
        raise ConfigError(
            "wal.enabled needs routing.mode: sessionize (a routing collector keeps no sessions)"
        )


def shared_secret(settings: Settings) -> bytes:
    """The deployment secret the distributed layout seals observations with: configured, never
    generated, since every collector and sessionizer must hold the same one."""
    from turnwatch.collector.deid.secret import SecretError, load_secret

    deid = settings.deid
    if deid.secret is None and deid.secret_file is None:
        raise SecretError(
            "the distributed layout (routing.mode: route, --role sessionizer) needs deid.secret "
            "or deid.secret_file: every collector and sessionizer must share one key"
        )
    return load_secret(deid, settings.mode, settings.data_dir)


def build_collector(context: ServiceContext, output: SessionSink | None = None) -> CollectorRole:
    """The collector as `turnwatch serve` runs it: de-identification in front of `output`
    (default: the bus). Fails here, before a port is bound, on a missing key (production) or
    spaCy model."""
    # Imported here: Presidio and spaCy take seconds to load, and only collectors need them.
    from turnwatch.collector.deid.stage import build_deidentifying_sink

    settings = context.settings
    check_collector(settings)
    if output is None:
        check_wal_fits(settings)
    if settings.routing.mode == "route":
        if not settings.bus.kafka.bootstrap:
            raise ValueError("routing.mode: route needs Kafka (bus.kafka.bootstrap)")
        return CollectorRole(context, LoggingSink(), sealer=Sealer(shared_secret(settings)))
    deidentifying = build_deidentifying_sink(
        settings.deid,
        settings.mode,
        settings.data_dir,
        context.registry,
        output or BusSink(context.bus()),
    )
    return CollectorRole(
        context, deidentifying, close=deidentifying.close, flush=deidentifying.flush
    )
