"""New conversation ids and service names must not grow /metrics once the label limits are full.

Two waves of conversations, each from its own `service.name`, go through the real OTLP/HTTP
receiver, the sessionizer and the sampler; each closed session becomes a score record for the
exporter on the same registry. The collector's metrics have fixed labels, and a made-up service
name seen once never takes a `service` label slot (it needs `exporter.service_min_sessions`
sessions), so both waves count under `other` and the second adds not one series. The large
flood, with memory, is `benchmarks/flood.py`.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, generate_latest
from turnwatch.exporters.config import ExporterConfig
from turnwatch.exporters.labels import MAX_CANDIDATES
from turnwatch.exporters.score_exporter import ScoreExporter

from tests.conftest import make_settings, settled
from tests.flood import ExportingSink, flood_request, series, service_values
from tests.otlp_requests import LOOPBACK, PROTOBUF
from tests.stages import collector_into
from tests.test_exporter import score_record
from turnwatch.app.serve import BackgroundService

MAX_SERVICES = 5
WAVE = 40


def test_a_second_wave_of_new_ids_and_services_adds_no_series():
    settings = make_settings(**{"otlp.grpc_enabled": False})
    sink = ExportingSink()
    background = BackgroundService(settings, collector_into(sink))
    service = background.start()
    sink.exporter = ScoreExporter(service.registry, ExporterConfig(max_services=MAX_SERVICES))
    base = f"http://127.0.0.1:{service.ports.otlp_http}"
    ops = f"http://127.0.0.1:{service.ports.ops}"
    pages = []
    try:
        for wave in range(2):
            body = flood_request(wave * WAVE, WAVE)
            answer = LOOPBACK.post(
                f"{base}/v1/traces", content=body, headers={"Content-Type": PROTOBUF}, timeout=10
            )
            assert answer.status_code == 200, answer.text
            assert settled(ops).delivered == (wave + 1) * WAVE
            pages.append(LOOPBACK.get(f"{ops}/metrics").text)
    finally:
        background.stop()
    first, second = pages
    assert len(series(second)) == len(series(first))

    # Made-up names seen once take no slot (first come, the first MAX_SERVICES held them for good).
    assert service_values(first) == service_values(second) == {"other"}
    scored = {
        sample.labels["service"]: sample.value
        for sample in series(second)
        if sample.name == "turnwatch_sessions_scored_total"
    }
    assert scored == {"other": 2 * WAVE}
    # No conversation id leaks into any label or help text.
    assert "flood-conv-" not in second


def test_service_slots_go_by_traffic_not_to_the_first_names_seen():
    """Junk names (one session each) arrive first and keep coming; real services, with steady
    traffic, still get the slots, and the junk never does: taken first come, the junk held all
    of them. (A service keeps its count while its next session comes within MAX_CANDIDATES new
    names of its last.)"""
    registry = CollectorRegistry()
    config = ExporterConfig(max_services=3)  # service_min_sessions: 5 by default
    exporter = ScoreExporter(registry, config)
    junk = (f"junk-{n}" for n in range(100_000))
    sessions = 0

    def observe(service: str) -> None:
        nonlocal sessions
        sessions += 1
        exporter.observe(score_record(f"s-{sessions}", service=service))

    for _ in range(50):
        observe(next(junk))
    for _ in range(config.service_min_sessions):
        for service in ("billing-bot", "support-bot", "travel-bot", "weather-bot"):
            for _ in range(200):
                observe(next(junk))
            observe(service)
    for _ in range(5_000):  # a flood that outgrows the table of waiting names
        observe(next(junk))
    scored = {
        sample.labels["service"]: sample.value
        for sample in series(generate_latest(registry).decode())
        if sample.name == "turnwatch_sessions_scored_total"
    }
    # Three slots: the first three services to reach five sessions; the fourth stays `other`.
    assert set(scored) == {"billing-bot", "support-bot", "travel-bot", "other"}
    assert scored["billing-bot"] == scored["support-bot"] == scored["travel-bot"] == 1
    assert scored["other"] == sessions - 3
    assert len(exporter.service._candidates) <= MAX_CANDIDATES


def test_a_service_allow_list_names_only_those_services_from_the_first_session():
    registry = CollectorRegistry()
    exporter = ScoreExporter(registry, ExporterConfig(services=["support-bot"]))
    for number, service in enumerate(["junk-1", "support-bot", "junk-2"]):
        exporter.observe(score_record(f"s-{number}", service=service))
    assert service_values(generate_latest(registry).decode()) == {"support-bot", "other"}
