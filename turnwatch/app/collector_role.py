"""The collector role: OTLP receivers -> pipeline -> handoff -> de-identification -> the bus.

`build_collector` is how `turnwatch serve` composes it, always with de-identification in front of
the output. `CollectorRole` itself takes whatever next stage it is given: a test that wants the raw
sessions composes one in front of a capturing stage. With `routing.mode: route` the collector
only decodes and routes sealed observations to the sessionizer role (`sessionizer_role.py`); it
loads no Presidio, since nothing readable leaves it.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable

from turnwatch.app.context import ServiceContext
from turnwatch.app.exposure import check_collector
from turnwatch.app.http import Ports, Server, bind, http_server
from turnwatch.app.settings import Settings
from turnwatch.bus.base import Bus
from turnwatch.bus.records import SESSIONS, RecordTooLarge
from turnwatch.collector.deid.secret import load_secret, session_id_key
from turnwatch.collector.handoff import Handoff
from turnwatch.collector.observations import ObservationCodec
from turnwatch.collector.otlp_grpc import create_grpc_server
from turnwatch.collector.otlp_http import create_otlp_app
from turnwatch.collector.pipeline import (
    CollectorPipeline,
    LoggingSink,
    SessionBuilder,
    SessionSink,
)
from turnwatch.collector.receiver import Receiver
from turnwatch.collector.router import ObservationRouter
from turnwatch.collector.sealing import Sealer
from turnwatch.exporters.ops import ReadinessCheck
from turnwatch.schema import Session

log = logging.getLogger("turnwatch.serve")

DRAIN_TIMEOUT_SECONDS = 10.0


class BusSink:
    """The collector's last stage: de-identified sessions onto `turnwatch.sessions`."""

    def __init__(self, bus: Bus) -> None:
        self.bus = bus
        self._log = LoggingSink()

    async def deliver(self, session: Session) -> None:
        try:
            await self.bus.publish(SESSIONS, session.session_id, session)
        except RecordTooLarge:
            return  # counted as rejected by the bus
        await self._log.deliver(session)


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
        self.handoff = Handoff(config.handoff, metrics, build, next_stage)
        self.router: ObservationRouter | None = None
        if sealer is not None:
            codec = ObservationCodec(sealer)
            self.router = ObservationRouter(config.routing, codec, metrics, context.bus().publish)
        self.pipeline = CollectorPipeline(config, metrics, self.handoff, router=self.router)
        self.otlp = settings.otlp
        self._close = close
        self._flush = flush
        self._server: Server | None = None
        self._grpc_server: object | None = None
        self._receiver: Receiver | None = None
        self._tasks: list[asyncio.Task[None]] = []

    def readiness(self) -> dict[str, ReadinessCheck]:
        overloaded = self.pipeline.overloaded
        return {"pipeline": lambda: "handoff or routing queue saturated" if overloaded() else None}

    @property
    def started(self) -> bool:
        return self._server is not None and bool(self._server.started)

    async def start(self, ports: Ports) -> None:
        receiver = self._receiver = Receiver(self.otlp, self.pipeline, self.pipeline.metrics)
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
        self._tasks = [
            asyncio.create_task(self._server.serve(sockets=[sock]), name="otlp-http"),
            asyncio.create_task(self.pipeline.run_sweeper(), name="sweeper"),
            asyncio.create_task(self.handoff.run(), name="handoff"),
        ]
        if self.router is not None:
            self._tasks.append(asyncio.create_task(self.router.run(), name="router"))

    async def stop(self) -> None:
        """Stop receiving, close every open session and wait for the next stage to take them."""
        if self._grpc_server is not None:
            await self._grpc_server.stop(grace=2)  # type: ignore[attr-defined]
        if self._server is not None:
            self._server.should_exit = True
            await self._tasks[0]
        if self._receiver is not None:
            self._receiver.close()
        self.pipeline.close_all()
        await self._drain()
        for task in self._tasks[1:]:
            task.cancel()
        await asyncio.gather(*self._tasks[1:], return_exceptions=True)

    async def _drain(self) -> None:
        # Not wait_for: drain() swallows its own cancellation, so wait_for would return as if
        # it had finished and a timed-out drain would go unreported.
        if self.router is not None:
            routed = asyncio.create_task(self.router.drain(), name="drain-router")
            if not (await asyncio.wait({routed}, timeout=DRAIN_TIMEOUT_SECONDS))[0]:
                lost = self.router.queue.qsize()
                log.error("routing drain timed out", extra={"lost_records": lost})
                routed.cancel()
        drain = asyncio.create_task(self._drain_stages(), name="drain")
        finished, _ = await asyncio.wait({drain}, timeout=DRAIN_TIMEOUT_SECONDS)
        if not finished:
            lost = self.handoff.count_lost()
            log.error("drain timed out; sessions lost at shutdown", extra={"lost_sessions": lost})
            drain.cancel()
            await asyncio.gather(drain, return_exceptions=True)

    async def _drain_stages(self) -> None:
        await self.handoff.drain()
        if self._flush is not None:
            await self._flush()

    def close(self) -> None:
        if self._close is not None:
            self._close()


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
