"""The real OTel SDK exporters (HTTP protobuf and gRPC) into a running turnwatch serve."""

from __future__ import annotations

import pytest
from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import (
    OTLPMetricExporter as GrpcMetricExporter,
)
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter
from opentelemetry.exporter.otlp.proto.http.metric_exporter import (
    OTLPMetricExporter as HttpMetricExporter,
)
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader, MetricExportResult
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from prometheus_client.parser import text_string_to_metric_families

from tests.otel_chatbot import SUPPORT_EXCHANGES, SYSTEM_PROMPT, provider_with, run_conversation
from tests.otlp_requests import LOOPBACK
from turnwatch.schema import Role


def _exporter(kind: str, running):
    if kind == "http":
        return HttpExporter(endpoint=f"{running.http_url}/v1/traces")
    return GrpcExporter(endpoint=running.grpc_endpoint, insecure=True)


@pytest.mark.parametrize("transport", ["http", "grpc"])
def test_multi_turn_conversation_with_tools_is_rebuilt_turn_by_turn(running, transport):
    provider = provider_with(BatchSpanProcessor(_exporter(transport, running)))
    run_conversation(provider, "conv-123", SUPPORT_EXCHANGES)
    provider.shutdown()

    [session] = running.sink.wait_for(1)
    assert session.conversation_key == "conv-123"
    assert session.key_source == "gen_ai.conversation.id"
    assert session.service == "support-bot"
    assert session.user_id == "user-7"
    assert session.provenance.models == ["gpt-4o-mini"]
    assert session.provenance.service_version == "1.4.2"
    assert session.system_instructions == [SYSTEM_PROMPT]
    assert len(session.trace_ids) == 3
    assert not session.incomplete, session.incomplete_reasons

    shape = [(t.role, t.text, [c.name for c in t.tool_calls]) for t in session.turns]
    assert shape == [
        (Role.USER, "Hi, where is my order 4411?", []),
        (Role.ASSISTANT, None, ["lookup_order"]),
        (Role.ASSISTANT, "Your order 4411 ships tomorrow.", []),
        (Role.USER, "Can I change the address?", []),
        (Role.ASSISTANT, "Yes, what is the new address?", []),
        (Role.USER, "12 Baker Street, London", []),
        (Role.ASSISTANT, None, ["update_address"]),
        (Role.ASSISTANT, "Done: the address is updated.", []),
    ]
    lookup = session.turns[1].tool_calls[0]
    assert lookup.id == "call_0"
    assert lookup.arguments == {"order_id": "4411"}
    assert lookup.result == {"status": "packed", "ship_date": "tomorrow"}
    assert lookup.error is None
    assert lookup.duration_ms is not None and lookup.started_at is not None
    answer = session.turns[2]
    assert answer.usage is not None and answer.usage.output_tokens == 12
    assert answer.model == "gpt-4o-mini" and answer.finish_reason == "stop"
    assert [t.index for t in session.turns] == list(range(8))
    assert session.sampling.sampled and session.sampling.reason.value == "rate"


def _otlp_requests(running, signal: str) -> dict[tuple[str, str], float]:
    text = LOOPBACK.get(f"{running.ops_url}/metrics", timeout=10).text
    return {
        (sample.labels["transport"], sample.labels["outcome"]): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == "turnwatch_otlp_requests_total" and sample.labels["signal"] == signal
    }


def test_metric_exports_are_answered_and_counted_not_used(running):
    """SDKs that export metrics beside traces (traceloop-sdk) get a success, not a 404."""
    reader = InMemoryMetricReader()
    provider = MeterProvider(
        metric_readers=[reader], resource=Resource.create({"service.name": "metrics-bot"})
    )
    provider.get_meter("metrics-bot").create_counter("chat.requests").add(3)
    data = reader.get_metrics_data()
    for exporter in (
        HttpMetricExporter(endpoint=f"{running.http_url}/v1/metrics"),
        GrpcMetricExporter(endpoint=running.grpc_endpoint, insecure=True),
    ):
        assert exporter.export(data) is MetricExportResult.SUCCESS
        exporter.shutdown()
    provider.shutdown()

    assert _otlp_requests(running, "metrics") == {("http", "ignored"): 1, ("grpc", "ignored"): 1}
    assert not any(s.service == "metrics-bot" for s in running.sink.sessions)
