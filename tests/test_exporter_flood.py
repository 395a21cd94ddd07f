"""New conversation ids and service names must not grow /metrics once the label limits are full.

Two waves of conversations, each from its own `service.name`, go through the real OTLP/HTTP
receiver, the sessionizer and the sampler; each closed session becomes a score record for the
exporter on the same registry. The collector's metrics have fixed labels and the exporter's
`service` label overflows to `other`, so the second wave adds not one series. The large flood,
with memory, is `benchmarks/flood.py`.
"""

from __future__ import annotations

from turnwatch.exporters.config import ExporterConfig
from turnwatch.exporters.score_exporter import ScoreExporter

from tests.conftest import make_settings, settled
from tests.flood import ExportingSink, flood_request, series, service_values
from tests.otlp_requests import LOOPBACK, PROTOBUF
from tests.stages import collector_into
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

    admitted = service_values(second) - {"other"}
    assert len(admitted) == MAX_SERVICES
    assert admitted <= {f"flood-svc-{n}" for n in range(WAVE)}  # the first seen keep their names
    assert service_values(first) == service_values(second) == admitted | {"other"}
    scored = {
        sample.labels["service"]: sample.value
        for sample in series(second)
        if sample.name == "turnwatch_sessions_scored_total"
    }
    assert scored == {**dict.fromkeys(admitted, 1.0), "other": 2 * WAVE - MAX_SERVICES}
    # No conversation id leaks into any label or help text.
    assert "flood-conv-" not in second
