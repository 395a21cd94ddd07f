"""Resource attributes from OTLP to the session store and the gate: which ones a session keeps
(the allow-list, value caps, first value wins), real OTel SDK spans with different
`deployment.environment` values reaching the session, and, through de-identification and the
store, a gate selection by that attribute picking exactly the right sessions."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import re

import orjson
import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from turnwatch.collector.config import SessionConfig
from turnwatch.collector.identity import ContextReader
from turnwatch.collector.observations import ObservationCodec
from turnwatch.collector.otlp_common import DecodeLimits
from turnwatch.collector.otlp_proto import trace_request_to_views
from turnwatch.collector.records import first_values
from turnwatch.collector.sealing import Sealer
from turnwatch.exporters.sessions.handler import open_store
from turnwatch.exporters.sessions.model import SessionFilters

from tests.conftest import make_settings, start_service
from tests.otel_chatbot import SUPPORT_EXCHANGES, run_conversation
from tests.otlp_requests import chat_span as otlp_chat_span
from tests.otlp_requests import key_values, metric_value, trace_request
from tests.stages import all_roles
from tests.test_routing import Member, Routing
from tests.test_sessionizer import IDLE, Harness, _text, chat_span, marker_span
from tests.waiting import eventually
from turnwatch.app.cli import main
from turnwatch.app.serve import BackgroundService
from turnwatch.app.settings import load_settings
from turnwatch.schema import Provenance

KEPT = ["deployment.environment", "service.namespace", "host.name"]


def reader(**sessions: object) -> ContextReader:
    collector = load_settings(None, {f"sessions.{k}": v for k, v in sessions.items()}).collector
    return ContextReader(
        collector.conversation_key, collector.sessions, collector.sampling, "unknown"
    )


def test_only_listed_attributes_are_kept_as_capped_text_once_per_resource_block():
    read = reader(resource_attributes=KEPT, max_resource_attribute_chars=8)
    resource = {
        "service.name": "shop",
        "deployment.environment": "production-eu-west",
        "service.namespace": 42,
        "host.name": ["a", "b"],  # an array has no one value to select on
        "k8s.pod.name": "pod-7",  # not listed
    }
    first = read.read({}, resource, "scope", 0, (), 0)
    second = read.read({}, resource, "scope", 0, (), 0)
    assert first.resource_attributes == {
        "deployment.environment": "producti",
        "service.namespace": "42",
    }
    assert second.resource_attributes is first.resource_attributes  # read once per block
    flags = read.read({}, {"deployment.environment": True, "host.name": "  "}, "s", 0, (), 0)
    assert flags.resource_attributes == {"deployment.environment": "true"}
    defaults = reader().read({}, resource, "scope", 0, (), 0)
    assert defaults.resource_attributes == {
        "deployment.environment": "production-eu-west",
        "service.namespace": "42",
    }


@pytest.mark.parametrize(
    ("keys", "message"),
    [
        (["environment"], "is not a resource attribute key"),
        (["service.version"], "kept on every session already"),
        ([f"a.{n}" for n in range(33)], "at most 32 items"),
    ],
)
def test_a_resource_attribute_list_that_cannot_be_kept_stops_start_up(keys, message):
    with pytest.raises(ValueError, match=message):
        SessionConfig(resource_attributes=keys)


def test_the_first_value_of_each_attribute_wins_and_shared_dicts_stay_as_they_were():
    earlier = {"deployment.environment": "prod"}
    later = {"deployment.environment": "canary", "service.namespace": "shop"}
    merged = first_values(earlier, later)
    assert merged == {"deployment.environment": "prod", "service.namespace": "shop"}
    assert earlier == {"deployment.environment": "prod"} and len(later) == 2
    assert first_values(merged, earlier) is merged
    assert first_values({}, later) is later


def test_a_session_keeps_the_attributes_of_every_resource_it_spans():
    harness = Harness(**{"sessions.resource_attributes": KEPT})
    # A model call before its trace is named (the pending path), then the naming root span
    # from another resource of the same service (conversations are scoped by service), then a
    # later call from a third.
    child = chat_span("trace-a", [_text("user", "hello")], "hi")
    child.resource = {"service.name": "bot", "deployment.environment": "prod"}
    root = marker_span("trace-a", {"session.id": "conv-a"})
    root.resource = {"service.name": "bot", "service.namespace": "shop"}
    later = chat_span(
        "trace-b", [_text("user", "again")], "yes", attributes={"session.id": "conv-a"}
    )
    later.resource = {"service.name": "bot", "deployment.environment": "canary", "host.name": "h"}
    harness.send(child)
    harness.send(root)
    harness.send(later)
    [session] = harness.sweep_after(IDLE)
    assert session.conversation_key == "conv-a"
    assert session.provenance.resource_attributes == {
        "deployment.environment": "prod",
        "service.namespace": "shop",
        "host.name": "h",
    }


def provider(endpoint: str, environment: str) -> TracerProvider:
    resource = Resource.create(
        {
            "service.name": "support-bot",
            "service.version": "1.4.2",
            "deployment.environment": environment,
            "host.name": f"web-{environment}.internal",
            "k8s.pod.name": f"support-bot-{environment}-7f9c",
        }
    )
    traced = TracerProvider(resource=resource)
    # Exported at shutdown only, one request per environment: no conversation is split over
    # two requests, so each closes once and has one revision.
    exporter = OTLPSpanExporter(endpoint=f"{endpoint}/v1/traces")
    traced.add_span_processor(BatchSpanProcessor(exporter, schedule_delay_millis=60_000))
    return traced


def emit(endpoint: str, plan: dict[str, int]) -> None:
    for environment, count in plan.items():
        traced = provider(endpoint, environment)
        for number in range(count):
            run_conversation(traced, f"{environment}-{number}", SUPPORT_EXCHANGES[:1])
        traced.shutdown()


def test_otel_sdk_spans_carry_their_deployment_environment_onto_the_session():
    settings = make_settings(**{"otlp.grpc_enabled": False, "sessions.resource_attributes": KEPT})
    running = start_service(settings)
    try:
        emit(running.http_url, {"staging": 2, "production": 3})
        sessions = running.sink.wait_for(5)
    finally:
        running.background.stop()
    environments = {s.conversation_key: s.provenance.resource_attributes for s in sessions}
    assert len(sessions) == 5
    for key, attributes in environments.items():
        environment = key.split("-")[0]
        assert attributes == {
            "deployment.environment": environment,
            "host.name": f"web-{environment}.internal",
        }


@pytest.mark.slow
def test_a_gate_selection_by_deployment_environment_picks_exactly_its_sessions(tmp_path, capsys):
    async def no_tap(topic: str, record) -> list:
        return []

    settings = make_settings(
        data_dir=str(tmp_path),
        **{"otlp.grpc_enabled": False, "sessions.resource_attributes": KEPT},
    )
    plan = {"staging": 3, "production": 5}
    background = BackgroundService(settings, all_roles(no_tap))
    service = background.start()
    try:
        emit(f"http://127.0.0.1:{service.ports.otlp_http}", plan)
        ops = f"http://127.0.0.1:{service.ports.ops}"
        eventually(
            lambda: metric_value(ops, "turnwatch_session_store_sessions", state="scored"),
            lambda seen: seen == 8,
            timeout=90,
            what="8 scored sessions in the store",
        )
    finally:
        background.stop()

    store = open_store(settings.session_store, tmp_path)
    for environment, count in plan.items():
        selected = store.list(SessionFilters(attributes={"deployment.environment": environment}))
        assert selected.total == count
    stored = store.get(store.list(SessionFilters()).items[0].session_id)
    attributes = stored.session.provenance.resource_attributes
    assert set(attributes) == {"deployment.environment", "host.name"}  # the pod is not listed
    # A host name leaves the collector as a keyed id: the same for every session of the host.
    assert re.fullmatch(r"[0-9a-f]{32}", attributes["host.name"])
    hosts = {
        store.get(item.session_id).session.provenance.resource_attributes["host.name"]
        for item in store.list(SessionFilters()).items
    }
    assert len(hosts) == 2
    keyed_host = attributes["host.name"]
    environment = attributes["deployment.environment"]
    by_host = store.list(SessionFilters(attributes={"host.name": keyed_host}))
    assert by_host.total == plan[environment]

    capsys.readouterr()
    code = main(
        [
            *("gate", "--data-dir", str(tmp_path), "--json"),
            *("--baseline", "store:deployment.environment=staging"),
            *("--candidate", "store:service=support-bot,deployment.environment=production"),
        ]
    )
    report = json.loads(capsys.readouterr().out)
    assert code in (0, 1, 2)
    assert report["baseline"]["cases"] == 3 and report["candidate"]["cases"] == 5
    assert report["paired"] is False

    code = main(
        [
            *("gate", "--data-dir", str(tmp_path)),
            *("--baseline", "store:deployment.environment=staging"),
            *("--candidate", "store:k8s.pod.name=support-bot-production-7f9c"),
        ]
    )
    error = capsys.readouterr().err
    assert code == 3
    assert "no stored session carries the resource attribute 'k8s.pod.name'" in error
    assert "(stored: deployment.environment, host.name;" in error


def test_records_from_before_resource_attributes_still_read():
    # A session without attributes is written as before, so older readers still take it.
    bare = Provenance()
    assert "resource_attributes" not in bare.model_dump_json()
    kept = Provenance(resource_attributes={"deployment.environment": "prod"})
    assert Provenance.model_validate_json(kept.model_dump_json()) == kept
    # An observation sealed by a routing collector from before the field opens with none.
    codec = ObservationCodec(Sealer(b"resource-attributes-test-secret"))
    context = reader().read({"session.id": "c-1"}, {"service.name": "shop"}, "scope", 0, (), 0)
    payload = [
        {
            "trace_id": "t-1",
            "time_ns": 1,
            "context": {
                field.name: getattr(context, field.name)
                for field in dataclasses.fields(context)
                if field.name != "resource_attributes"
            },
            "observation": None,
        }
    ]
    record = codec._seal("conversation", orjson.dumps(payload))
    [opened] = codec.open_observations(record)
    assert opened.context.conversation_key == "c-1"
    assert opened.context.resource_attributes == {}


def test_the_distributed_layout_carries_the_attributes_from_the_collector_to_the_session():
    request = trace_request([otlp_chat_span("conv-a")], service="shop")
    extra = {"deployment.environment": "prod", "k8s.pod.name": "shop-1"}
    request.resource_spans[0].resource.attributes.extend(key_values(extra))
    routing = Routing()  # the collector's config decides what is kept
    routing.pipeline.accept_spans(trace_request_to_views(request, DecodeLimits()).items)
    member = Member()

    async def take_all() -> None:
        for offset, (_, record) in enumerate(routing.queued()):
            await member.take(record, 0, offset)

    asyncio.run(take_all())
    member.now = 10
    member.pipeline.sweep()
    [session] = member.built.sessions
    assert session.conversation_key == "conv-a"
    assert session.provenance.resource_attributes == {"deployment.environment": "prod"}
