"""What every role builder receives: the settings, the process's registry, and the bus."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from prometheus_client import CollectorRegistry

from turnwatch.app.settings import Settings
from turnwatch.bus.base import Bus
from turnwatch.bus.config import BusConfig
from turnwatch.bus.metrics import BusMetrics
from turnwatch.collector.metrics import CollectorMetrics


def build_bus(config: BusConfig, metrics: BusMetrics, data_dir: Path) -> Bus:
    """Kafka when a bootstrap is configured, else the embedded bus."""
    spool_dir = config.spool.directory or data_dir / "spool"
    if config.kafka.bootstrap:
        from turnwatch.bus.kafka import KafkaBus

        return KafkaBus(config, metrics, spool_dir)
    from turnwatch.bus.embedded import EmbeddedBus

    return EmbeddedBus(config, metrics, spool_dir)


@dataclass
class ServiceContext:
    settings: Settings
    registry: CollectorRegistry = field(default_factory=CollectorRegistry)
    built_bus: Bus | None = None
    """None until a role asks for the bus: a collector composed in front of another stage
    (a test's capturing stage) runs without one."""

    built_collector_metrics: CollectorMetrics | None = None

    def collector_metrics(self) -> CollectorMetrics:
        """One set per process: a routing collector and a sessionizer may share it (`serve`
        with `routing.mode: route` runs both)."""
        if self.built_collector_metrics is None:
            self.built_collector_metrics = CollectorMetrics(self.registry)
        return self.built_collector_metrics

    def bus(self) -> Bus:
        if self.built_bus is None:
            settings = self.settings
            self.built_bus = build_bus(settings.bus, BusMetrics(self.registry), settings.data_dir)
        return self.built_bus
