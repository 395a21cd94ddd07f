"""A flood of conversations, each with its own id and `service.name`, and the pieces to watch
what it does to /metrics: used by test_exporter_flood.py (small, exact) and benchmarks/flood.py
(large, a table)."""

from __future__ import annotations

import threading

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample
from turnwatch.collector.pipeline import HandedOn
from turnwatch.exporters.score_exporter import ScoreExporter

from tests.otlp_requests import chat_span, key_values
from tests.test_exporter import score_record
from turnwatch.schema import Session


class ExportingSink:
    """Stands in for scorer + bus: turns each session into a score record and exports it."""

    def __init__(self) -> None:
        self.exporter: ScoreExporter | None = None
        self.delivered = 0
        self._lock = threading.Lock()

    async def deliver(self, session: Session, handed_on: HandedOn | None = None) -> bool:
        assert self.exporter is not None
        record = score_record(session.session_id, session.revision, service=session.service)
        self.exporter.observe(record, session_ended_at=session.ended_at)
        with self._lock:
            self.delivered += 1
        return False


def flood_request(start: int, count: int, service: str | None = None) -> bytes:
    """Conversations `flood-conv-{n}`, n in [start, start + count), from services
    `flood-svc-{n}` (a new name each), or all from `service`."""
    request = ExportTraceServiceRequest(
        resource_spans=[
            ResourceSpans(
                resource=Resource(
                    attributes=key_values({"service.name": service or f"flood-svc-{n}"})
                ),
                scope_spans=[ScopeSpans(spans=[chat_span(f"flood-conv-{n}")])],
            )
            for n in range(start, start + count)
        ]
    )
    return request.SerializeToString()


def series(text: str) -> list[Sample]:
    """Every sample on a /metrics page: one per series."""
    return [sample for family in text_string_to_metric_families(text) for sample in family.samples]


def service_values(text: str) -> set[str]:
    return {sample.labels["service"] for sample in series(text) if "service" in sample.labels}
