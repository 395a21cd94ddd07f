"""The session store in the running pipeline: the embedded bus gives the exporter its own copy
of every session, the store joins it with its score record, and a record tap
(`bus.exporter_handler`) runs beside turnwatch's exporters instead of replacing them."""

from __future__ import annotations

import asyncio

import pytest
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families
from turnwatch.exporters.sessions.handler import open_store
from turnwatch.exporters.sessions.model import SessionFilters

from tests.conftest import make_settings
from tests.otlp_requests import LOOPBACK, metric_value
from tests.session_records import healthy
from tests.stages import all_roles, all_roles_raw
from tests.test_bus_embedded import post_session
from tests.waiting import eventually
from turnwatch.app.serve import BackgroundService
from turnwatch.bus.config import BusConfig
from turnwatch.bus.embedded import EmbeddedBus
from turnwatch.bus.metrics import BusMetrics
from turnwatch.bus.records import SESSIONS

TAPPED: list[tuple[str, str]] = []


async def tap(topic: str, record) -> list:
    """The `bus.exporter_handler` these tests configure."""
    TAPPED.append((topic, record.session_id))
    return []


def test_two_groups_on_one_embedded_topic_each_get_every_record_once():
    async def run() -> dict[str, list[str]]:
        bus = EmbeddedBus(BusConfig(), BusMetrics(CollectorRegistry()), None)
        bus.subscribe([SESSIONS], "scorers")
        bus.subscribe([SESSIONS], "exporters")
        for number in range(3):
            await bus.publish(SESSIONS, f"s-{number}", healthy(f"s-{number}"))
        await bus.publish(SESSIONS, "s-0", healthy("s-0"))  # a redelivery
        seen: dict[str, list[str]] = {"scorers": [], "exporters": []}
        stop = asyncio.Event()

        def handler(group: str):
            async def handle(topic, record):
                seen[group].append(record.session_id)
                return []

            return handle

        consumers = [
            asyncio.create_task(bus.consume([SESSIONS], group, handler(group), stop))
            for group in seen
        ]
        assert await bus.idle(5)
        stop.set()
        await asyncio.gather(*consumers)
        return seen

    seen = asyncio.run(run())
    assert seen == {"scorers": ["s-0", "s-1", "s-2"], "exporters": ["s-0", "s-1", "s-2"]}


def send_and_wait(settings, compose, count: int, metric: str, **labels: str) -> str:
    """Run turnwatch, post `count` conversations, wait until `metric` reaches `count`, and
    return /metrics as it was then (the service is stopped on the way out)."""
    background = BackgroundService(settings, compose)
    service = background.start()
    ops = f"http://127.0.0.1:{service.ports.ops}"
    otlp = f"http://127.0.0.1:{service.ports.otlp_http}"
    try:
        for number in range(count):
            assert post_session(otlp, f"conversation-{number}").status_code == 200
        eventually(
            lambda: metric_value(ops, metric, **labels),
            lambda seen: seen == count,
            timeout=60,
            what=f"{count} x {metric}",
        )
        return LOOPBACK.get(f"{ops}/metrics").text
    finally:
        background.stop()


def sample(metrics: str, name: str, **labels: str) -> float:
    for family in text_string_to_metric_families(metrics):
        for item in family.samples:
            if item.name == name and all(item.labels.get(k) == v for k, v in labels.items()):
                return item.value
    return 0.0


def test_a_tap_runs_beside_the_exporters_and_raw_sessions_stay_out_of_the_store(tmp_path):
    TAPPED.clear()
    plugin = {"otlp.grpc_enabled": False, "bus.exporter_handler": f"{__name__}:tap"}
    # Two sessions take no `service` label slot by traffic: the service is named.
    settings = make_settings(
        data_dir=str(tmp_path), **plugin, **{"exporter.services": ["errors-bot"]}
    )
    scored = "turnwatch_sessions_scored_total"
    metrics = send_and_wait(settings, all_roles_raw(), 2, scored, service="errors-bot")
    writes = "turnwatch_session_store_writes_total"
    # No de-identification in this composition: the store refuses the raw sessions.
    assert sample(metrics, writes, record="session", outcome="not_deidentified") == 2
    assert sample(metrics, writes, record="score", outcome="stored") == 2
    assert sorted(topic for topic, _ in TAPPED) == ["turnwatch.scores"] * 2


@pytest.mark.slow
def test_deidentified_sessions_reach_the_store_joined_with_their_scores(tmp_path):
    captured: list[str] = []

    async def record_tap(topic: str, record) -> list:
        captured.append(topic)
        return []

    settings = make_settings(data_dir=str(tmp_path), **{"otlp.grpc_enabled": False})
    joined = "turnwatch_session_store_sessions"
    send_and_wait(settings, all_roles(record_tap), 3, joined, state="scored")
    store = open_store(settings.session_store, tmp_path)
    page = store.list(SessionFilters(service="errors-bot"))
    assert page.total == 3
    stored = store.get(page.items[0].session_id)
    assert stored.session.deidentified and stored.score is not None
    assert stored.session.conversation_key.startswith("<")  # a pseudonym, never the raw key
    assert captured.count("turnwatch.scores") == 3
