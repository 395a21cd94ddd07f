from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from prometheus_client.parser import text_string_to_metric_families
from turnwatch.collector.pipeline import HandedOn

from tests.kafka_broker import TansuBroker, external_bootstrap
from tests.otlp_requests import LOOPBACK
from tests.waiting import eventually
from turnwatch.app.serve import BackgroundService, Service
from turnwatch.app.settings import Settings, load_settings
from turnwatch.schema import Session

# turnwatch processes the tests start (serve, roles) inherit this: one de-identification thread,
# since worker processes each load the model (seconds) and are tested on their own
# (tests/test_deid_workers.py).
os.environ.setdefault("TURNWATCH_DEID__WORKERS", "1")


class CapturingSink:
    """The next stage as a test sees it: keeps every handed-off session."""

    def __init__(self) -> None:
        self.sessions: list[Session] = []

    async def deliver(self, session: Session, handed_on: HandedOn | None = None) -> bool:
        self.sessions.append(session)
        return False

    def wait_for(self, count: int, timeout: float = 15.0) -> list[Session]:
        return eventually(
            lambda: list(self.sessions),
            lambda sessions: len(sessions) >= count,
            timeout=timeout,
            what=f"{count} sessions",
        )

    def session_for(self, key: str, timeout: float = 10.0) -> Session:
        """The one session with conversation key `key`, once it has arrived."""
        [session] = eventually(
            lambda: [s for s in self.sessions if s.conversation_key == key],
            timeout=timeout,
            what=f"a session for {key!r}",
        )
        return session


def make_settings(**overrides: object) -> Settings:
    values: dict[str, object] = {
        "otlp.http_port": 0,
        "otlp.grpc_port": 0,
        "ops.port": 0,
        "sessions.idle_timeout_seconds": 0.2,
        "sessions.sweep_interval_seconds": 0.05,
        # One de-identification thread: worker processes each load the model (seconds) and are
        # tested on their own (tests/test_deid_workers.py).
        "deid.workers": 1,
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


@dataclass(frozen=True)
class Settled:
    closed: float
    delivered: float
    dropped: float


def settled(ops_url: str, timeout: float = 10.0) -> Settled:
    """Wait until the collector behind `ops_url` holds nothing: no session open, every closed one
    decided and every sampled one handed to the next stage (delivered or dropped, both counted).

    Without new spans nothing more can reach the sink from then on, so a test can assert exactly
    what did, where a fixed sleep could only hope that whatever was coming had come."""

    def counts() -> dict[str, float]:
        totals: dict[str, float] = defaultdict(float)
        text = LOOPBACK.get(f"{ops_url}/metrics", timeout=10).text
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                name = sample.name
                if name == "turnwatch_sessions_sampled_total":
                    sampled = sample.labels["reason"] != "not_selected"
                    name = "sampled" if sampled else "not_selected"
                totals[name] += sample.value
        return totals

    def quiet(totals: dict[str, float]) -> bool:
        decided = totals["sampled"] + totals["not_selected"]
        handed_on = totals["turnwatch_handoff_delivered_total"]
        handed_on += totals["turnwatch_handoff_dropped_total"]
        return (
            totals["turnwatch_sessions_open"] == 0
            and totals["turnwatch_sessions_closed_total"] == decided
            and totals["sampled"] == handed_on
        )

    totals = eventually(counts, quiet, timeout=timeout, what="the collector to settle")
    return Settled(
        closed=totals["turnwatch_sessions_closed_total"],
        delivered=totals["turnwatch_handoff_delivered_total"],
        dropped=totals["turnwatch_handoff_dropped_total"],
    )


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
