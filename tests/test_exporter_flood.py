"""A flood of distinct conversation ids and service names must not grow /metrics without bound.

100,000 conversations, each from its own `service.name`, go through the real OTLP/HTTP receiver,
the sessionizer and the sampler; each closed session becomes a score record for the exporter on
the same registry. The collector's metrics use fixed labels; the exporter's `service` label must
overflow to `other`, and no conversation id may appear anywhere on /metrics.
"""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime

import httpx
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families
from turnwatch.exporters.config import ExporterConfig
from turnwatch.exporters.score_exporter import ScoreExporter

from tests.conftest import make_settings
from tests.otlp_requests import PROTOBUF, chat_span, key_values
from tests.stages import collector_into
from turnwatch.app.serve import BackgroundService
from turnwatch.schema import Session
from turnwatch.scores import BudgetUsage, JointSuccess, Score, ScoreRecord

CONVERSATIONS = 100_000
PER_REQUEST = 1_000
MAX_SERVICES = 20


class ExportingSink:
    """Stands in for scorer + bus: turns each session into a minimal score record, exports it."""

    def __init__(self) -> None:
        self.exporter: ScoreExporter | None = None
        self.delivered = 0
        self._lock = threading.Lock()

    async def deliver(self, session: Session) -> None:
        assert self.exporter is not None
        record = ScoreRecord(
            session_id=session.session_id,
            revision=session.revision,
            service=session.service,
            contract=None,
            scored_at=datetime.now(UTC),
            joint_success=JointSuccess(value=True, conditions={}),
            budgets=BudgetUsage(
                turns=len(session.turns),
                user_turns=1,
                tool_calls=0,
                latency_ms=1.0,
                max_turn_latency_ms=None,
                input_tokens=1,
                output_tokens=1,
                cost_usd=None,
            ),
            metrics=[Score(name="relevancy", value=0.9, metadata={"judge": "heuristic"})],
        )
        self.exporter.observe(record, session_ended_at=session.ended_at)
        with self._lock:
            self.delivered += 1


def flood_request(start: int) -> bytes:
    request = ExportTraceServiceRequest(
        resource_spans=[
            ResourceSpans(
                resource=Resource(attributes=key_values({"service.name": f"flood-svc-{n}"})),
                scope_spans=[ScopeSpans(spans=[chat_span(f"flood-conv-{n}")])],
            )
            for n in range(start, start + PER_REQUEST)
        ]
    )
    return request.SerializeToString()


def dropped(registry: CollectorRegistry) -> float:
    return sum(
        registry.get_sample_value("turnwatch_handoff_dropped_total", {"reason": reason}) or 0.0
        for reason in ("queue_full", "assembly_error", "sink_error")
    )


def series(text: str) -> list[tuple[str, dict[str, str]]]:
    return [
        (sample.name, sample.labels)
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    ]


def test_flood_of_ids_and_services_keeps_series_bounded():
    settings = make_settings(
        **{
            "sessions.idle_timeout_seconds": 0.2,
            "otlp.grpc_enabled": False,
            # Evictions close sessions in bursts; a deep queue keeps drops (counted) rare.
            "handoff.queue_size": 20_000,
        }
    )
    sink = ExportingSink()
    background = BackgroundService(settings, collector_into(sink))
    service = background.start()
    sink.exporter = ScoreExporter(service.registry, ExporterConfig(max_services=MAX_SERVICES))
    base = f"http://127.0.0.1:{service.ports.otlp_http}"
    ops = f"http://127.0.0.1:{service.ports.ops}"
    try:
        before = len(series(httpx.get(f"{ops}/metrics").text))
        started = time.monotonic()
        with httpx.Client(timeout=30) as client:
            for start in range(0, CONVERSATIONS, PER_REQUEST):
                body = flood_request(start)
                for _attempt in range(200):
                    answer = client.post(
                        f"{base}/v1/traces", content=body, headers={"Content-Type": PROTOBUF}
                    )
                    if answer.status_code != 503:
                        break
                    time.sleep(0.05)  # overloaded: the receiver asks us to come back
                assert answer.status_code == 200, answer.text
        deadline = time.monotonic() + 120
        while sink.delivered + dropped(service.registry) < CONVERSATIONS:
            assert time.monotonic() < deadline, (sink.delivered, dropped(service.registry))
            time.sleep(0.2)
        elapsed = time.monotonic() - started
        text = httpx.get(f"{ops}/metrics").text
    finally:
        background.stop()
    after = series(text)
    services = {labels["service"] for _name, labels in after if "service" in labels}
    print(
        f"\nflood: {sink.delivered} sessions exported "
        f"({dropped(service.registry):.0f} dropped) in {elapsed:.1f}s; "
        f"series {before} before, {len(after)} after; {len(services)} service values"
    )
    assert sink.delivered > CONVERSATIONS * 0.9  # the rest were dropped and counted
    assert services <= {f"flood-svc-{n}" for n in range(MAX_SERVICES)} | {"other"}
    assert "other" in services
    assert len(after) < 1_500, len(after)
    # No conversation id, and no service past the limit, leaks into any label or help text.
    assert "flood-conv-" not in text
    assert f'flood-svc-{MAX_SERVICES + 1}"' not in text
    scored_other = [
        labels
        for name, labels in after
        if name == "turnwatch_sessions_scored_total" and labels["service"] == "other"
    ]
    assert len(scored_other) == 1
