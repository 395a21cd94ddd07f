from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from tests.kafka_broker import TansuBroker, external_bootstrap
from turnwatch.app.serve import BackgroundService, Service
from turnwatch.app.settings import Settings, load_settings
from turnwatch.schema import Session


class CapturingSink:
    """The next stage as a test sees it: keeps every handed-off session."""

    def __init__(self) -> None:
        self.sessions: list[Session] = []
        self._changed = threading.Condition()

    async def deliver(self, session: Session) -> None:
        with self._changed:
            self.sessions.append(session)
            self._changed.notify_all()

    def wait_for(self, count: int, timeout: float = 15.0) -> list[Session]:
        deadline = time.monotonic() + timeout
        with self._changed:
            while len(self.sessions) < count:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise AssertionError(
                        f"expected {count} sessions, got {len(self.sessions)} within {timeout}s"
                    )
                self._changed.wait(remaining)
            return list(self.sessions)


def make_settings(**overrides: object) -> Settings:
    values: dict[str, object] = {
        "otlp.http_port": 0,
        "otlp.grpc_port": 0,
        "ops.port": 0,
        "sessions.idle_timeout_seconds": 0.5,
        "sessions.sweep_interval_seconds": 0.05,
    }
    values.update(overrides)
    return load_settings(None, values)


class Running:
    def __init__(self, background: BackgroundService, service: Service, sink: CapturingSink):
        self.background = background
        self.service = service
        self.sink = sink

    @property
    def http_url(self) -> str:
        return f"http://127.0.0.1:{self.service.ports.otlp_http}"

    @property
    def grpc_endpoint(self) -> str:
        return f"127.0.0.1:{self.service.ports.otlp_grpc}"

    @property
    def ops_url(self) -> str:
        return f"http://127.0.0.1:{self.service.ports.ops}"


def start_service(settings: Settings, deidentify: bool = False) -> Running:
    """A real collector in front of a capturing stage: the sessions as assembled, or through
    the de-identification stage `turnwatch serve` runs when `deidentify`."""
    from tests.stages import collector_into

    sink = CapturingSink()
    background = BackgroundService(settings, collector_into(sink, deidentified=deidentify))
    service = background.start()
    return Running(background, service, sink)


@pytest.fixture(scope="module")
def bootstrap() -> Iterator[str]:
    """A Kafka-protocol broker on loopback (Tansu), or `TURNWATCH_TEST_KAFKA_BOOTSTRAP`."""
    external = external_bootstrap()
    if external:
        yield external
        return
    broker = TansuBroker()
    broker.start()
    yield broker.bootstrap
    broker.stop()


@pytest.fixture
def running() -> Iterator[Running]:
    handle = start_service(make_settings())
    yield handle
    handle.background.stop()
