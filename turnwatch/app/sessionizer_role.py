"""The sessionizer role: `turnwatch.observations` in, de-identified sessions out.

A member of the `bus.kafka.sessionizer_group` consumer group owns the conversations of its
partitions: it runs the collector's pipeline from the sessionizer on (close, sample, assemble,
de-identify, publish to `turnwatch.sessions`), fed by what collectors in `routing.mode: route`
sealed. Offsets are committed only below the oldest observation whose session has not been
handed on (`turnwatch.bus.ledger`), so a member that stops or dies hands its open
conversations over by replay: at shutdown it publishes nothing half-built, it commits what is
done and drops the rest for the next owner. What the next owner cannot replay, because it was
committed (the links of quiet traces, the last revision of each conversation), it restores from
the partition's changelog before taking the partition's observations
(`turnwatch.collector.changelog`).
"""

from __future__ import annotations

import asyncio
import logging

from turnwatch.app.collector_role import BusSink, shared_secret
from turnwatch.app.context import ServiceContext
from turnwatch.app.roles import Consumer
from turnwatch.bus.kafka import KafkaBus
from turnwatch.bus.ledger import OffsetLedger
from turnwatch.bus.records import OBSERVATIONS
from turnwatch.collector.changelog import PartitionChangelog
from turnwatch.collector.deid.secret import session_id_key
from turnwatch.collector.handoff import Handoff
from turnwatch.collector.intake import ObservationIntake
from turnwatch.collector.observations import ObservationCodec
from turnwatch.collector.pipeline import CollectorPipeline, SessionBuilder, SessionSink
from turnwatch.collector.sealing import Sealer

log = logging.getLogger("turnwatch.serve")


class SessionizerRole:
    def __init__(self, context: ServiceContext, output: SessionSink | None = None) -> None:
        # Imported here: Presidio and spaCy take seconds to load.
        from turnwatch.collector.deid.stage import build_deidentifying_sink

        settings = context.settings
        secret = shared_secret(settings)  # first: a missing secret fails before Presidio
        sealer = Sealer(secret)
        config = settings.collector
        bus = context.bus()
        metrics = context.collector_metrics()
        output = output or BusSink(bus)
        self.sink = build_deidentifying_sink(
            settings.deid, settings.mode, settings.data_dir, context.registry, output
        )
        self.ledger = OffsetLedger()
        # Session ids keyed as a one-process collector keys them (see CollectorRole).
        build = SessionBuilder(config.service_fallback, metrics, session_id_key(secret))
        self.handoff = Handoff(config.handoff, metrics, build, self.sink)
        self.pipeline = CollectorPipeline(config, metrics, self.handoff, ledger=self.ledger)
        codec = ObservationCodec(sealer)
        self.intake = ObservationIntake(
            self.pipeline, codec, self.ledger, bus.publish, config.routing
        )
        self.changelog = PartitionChangelog(
            sealer,
            codec.route_key,
            self.ledger,
            bus.publish,
            self.pipeline.sessionizer.revisions,
            self.intake.links,
            metrics,
            bus.read_tail if isinstance(bus, KafkaBus) else None,
            limit=config.routing.max_traces + config.sessions.max_remembered_sessions,
            queue_size=config.handoff.queue_size,
        )
        self.intake.changelog = self.changelog
        self.pipeline.on_closed = self.changelog.closed
        self.ledger.on_gained = self.changelog.restore
        self.group = settings.bus.kafka.sessionizer_group

    async def sweep_forever(self) -> None:
        interval = self.pipeline.config.sessions.sweep_interval_seconds
        while True:
            await asyncio.sleep(interval)
            try:
                self.intake.sweep()
                self.pipeline.sweep()
            except Exception:
                log.exception("idle sweep failed", extra={"reason": "sweep_error"})

    async def drain(self, timeout: float) -> None:
        """At shutdown: publish the sessions already closed, and their changelog records; open
        ones stay for the next owner."""
        drain = asyncio.create_task(self._drain_both())
        finished, _ = await asyncio.wait({drain}, timeout=timeout)
        if not finished:
            log.error("sessionizer drain timed out", extra={"queued": self.handoff.queue.qsize()})

    async def _drain_both(self) -> None:
        await self.handoff.drain()
        await self.changelog.drain()

    def consumer(self) -> Consumer:
        overloaded = self.handoff.overloaded
        return Consumer(
            "sessionizer",
            (OBSERVATIONS,),
            self.group,
            self.intake.handle,
            readiness={"pipeline": lambda: "handoff queue saturated" if overloaded() else None},
            drain=self.drain,
            ledger=self.ledger,
            background=(self.handoff.run, self.changelog.run, self.sweep_forever),
            close=self.sink.close,
        )


def build_sessionizer(context: ServiceContext, output: SessionSink | None = None) -> Consumer:
    """`turnwatch serve --role sessionizer`; `output` replaces the bus after de-identification."""
    return SessionizerRole(context, output).consumer()
