"""What each role attaches to the bus: the collector's sink, the scorer and exporter handlers."""

from __future__ import annotations

from pathlib import Path

from collector.pipeline import LoggingSink
from turnwatch.bus.base import Bus, Handler
from turnwatch.bus.config import BusConfig
from turnwatch.bus.metrics import BusMetrics
from turnwatch.bus.plugins import RecordHandler, SessionProcessor
from turnwatch.bus.records import SESSIONS, Output, Record, RecordTooLarge
from turnwatch.schema import Session


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


def scorer_handler(processor: SessionProcessor) -> Handler:
    async def handle(topic: str, record: Record) -> list[Output]:
        assert isinstance(record, Session)  # the bus validated it against the session schema
        return list(await processor(record))

    return handle


def exporter_handler(handler: RecordHandler) -> Handler:
    async def handle(topic: str, record: Record) -> list[Output]:
        assert isinstance(record, dict)
        return list(await handler(topic, record))

    return handle


def build_bus(config: BusConfig, metrics: BusMetrics, data_dir: Path) -> Bus:
    """Kafka when a bootstrap is configured, else the embedded bus."""
    spool_dir = config.spool.directory or data_dir / "spool"
    if config.kafka.bootstrap:
        from turnwatch.bus.kafka import KafkaBus

        return KafkaBus(config, metrics, spool_dir)
    from turnwatch.bus.embedded import EmbeddedBus

    return EmbeddedBus(config, metrics, spool_dir)
