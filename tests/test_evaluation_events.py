"""Score records as `gen_ai.evaluation.result` events over OTLP/HTTP, into a loopback OTLP logs
receiver that decodes the protobuf requests: one event per check result and judge metric, each
part of a revision sent once however often it is delivered, failures and overflow counted."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from google.protobuf.json_format import MessageToDict
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from prometheus_client import CollectorRegistry
from turnwatch.exporters.config import EvaluationEventsConfig
from turnwatch.exporters.evaluation_events import EVENT_NAME, EvaluationEvents

from tests.session_records import failing, relevancy, scored
from turnwatch.app.roles import build_exporters
from turnwatch.app.settings import load_settings
from turnwatch.scores import Part, Score, ScoreRecord


class LogsReceiver:
    """OTLP/HTTP `/v1/logs`: protobuf requests decoded into (resource, scope, attributes)."""

    def __init__(self, status: int = 200) -> None:
        self.events: list[dict] = []
        self.resources: list[dict] = []
        self.headers: list[dict] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["content-length"]))
                assert self.path == "/v1/logs"
                assert self.headers["content-type"] == "application/x-protobuf"
                request = ExportLogsServiceRequest.FromString(body)
                receiver.headers.append(dict(self.headers))
                for resource_logs in request.resource_logs:
                    receiver.resources.append(_flat(resource_logs.resource.attributes))
                    for scope_logs in resource_logs.scope_logs:
                        for record in scope_logs.log_records:
                            event = _flat(record.attributes)
                            event["_event_name"] = record.event_name
                            event["_scope"] = scope_logs.scope.name
                            receiver.events.append(event)
                self.send_response(status)
                self.send_header("content-length", "0")
                self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1/logs"


def _flat(attributes) -> dict:
    return {
        item["key"]: next(iter(item["value"].values()))
        for item in (MessageToDict(a) for a in attributes)
    }


@pytest.fixture
def receiver() -> Iterator[LogsReceiver]:
    running = LogsReceiver()
    yield running
    running.server.shutdown()
    running.server.server_close()


def record_with_metrics() -> ScoreRecord:
    unjudged = Score(
        name="knowledge_retention",
        value=None,
        unscored_reason="the judge endpoint timed out",
        metadata={"judge": "loopback", "unscored": "timeout"},
    )
    return scored(failing("sess-eval-1"), metrics=[relevancy(0.75), unjudged])


def counted(registry: CollectorRegistry) -> dict[str, float]:
    return {
        outcome: registry.get_sample_value(
            "turnwatch_evaluation_events_total", {"outcome": outcome}
        )
        or 0.0
        for outcome in ("exported", "failed", "queue_full")
    }


def events_for(url: str, registry: CollectorRegistry, **overrides) -> EvaluationEvents:
    config = EvaluationEventsConfig(endpoint=url, headers={"x-api-key": "k-123"}, **overrides)
    return EvaluationEvents(config, registry)


async def test_each_result_is_one_event_and_a_redelivery_sends_nothing_more(receiver):
    registry = CollectorRegistry()
    events = events_for(receiver.url, registry)
    record = record_with_metrics()
    results = list(record.results())

    await events.handle("turnwatch.scores", record)
    await events.handle("turnwatch.scores", record)  # delivered again
    await events.drain(10)

    expected = len(results) + 2
    assert len(receiver.events) == expected
    assert counted(registry) == {"exported": expected, "failed": 0, "queue_full": 0}
    assert receiver.resources[0]["service.name"] == "turnwatch"
    assert receiver.headers[0]["x-api-key"] == "k-123"
    assert {e["_event_name"] for e in receiver.events} == {EVENT_NAME}
    assert {e["event.name"] for e in receiver.events} == {EVENT_NAME}
    assert len({e["log.record.uid"] for e in receiver.events}) == expected  # one id each
    by_name = {e["gen_ai.evaluation.name"]: e for e in receiver.events}

    [forbidden] = [r for r in results if r.check == "forbidden_action"]
    check = by_name["forbidden_action"]
    assert check["gen_ai.evaluation.score.label"] == "failed" == forbidden.status.value
    assert check["gen_ai.evaluation.explanation"].startswith(forbidden.findings[0].explanation)
    assert "error.type" not in check
    assert check["turnwatch.evaluator"] == "turnwatch.check"
    assert check["turnwatch.session.id"] == "sess-eval-1"
    assert check["turnwatch.session.revision"] == str(record.revision)  # int64 as JSON string
    assert check["turnwatch.service"] == "support-bot"

    relevant = by_name["turn_relevancy"]
    assert relevant["gen_ai.evaluation.score.value"] == 0.75
    assert relevant["gen_ai.evaluation.explanation"] == "0.75 of windows relevant"
    assert relevant["turnwatch.evaluator"] == "turnwatch.judge.heuristic"
    assert relevant["turnwatch.evaluation.level"] == "judge"

    unjudged = by_name["knowledge_retention"]
    assert "gen_ai.evaluation.score.value" not in unjudged  # unscored is no value, never 0
    assert unjudged["gen_ai.evaluation.score.label"] == "unscored"
    assert unjudged["error.type"] == "timeout"
    assert unjudged["gen_ai.evaluation.explanation"] == "the judge endpoint timed out"


async def test_the_judged_part_after_the_checks_part_sends_only_the_metrics(receiver):
    registry = CollectorRegistry()
    events = events_for(receiver.url, registry)
    record = record_with_metrics()
    checks = record.model_copy(update={"part": Part.CHECKS, "metrics": []})
    judged = record.model_copy(update={"part": Part.JUDGED})

    await events.handle("turnwatch.scores", checks)
    await events.handle("turnwatch.scores", judged)
    await events.drain(10)

    names = [e["gen_ai.evaluation.name"] for e in receiver.events]
    assert names == [r.check for r in record.results()] + ["turn_relevancy", "knowledge_retention"]


async def test_a_refusing_or_absent_backend_is_counted_as_failed():
    refusing = LogsReceiver(status=503)
    try:
        for url in (refusing.url, "http://127.0.0.1:9/v1/logs"):
            registry = CollectorRegistry()
            events = events_for(url, registry, timeout_seconds=2)
            record = record_with_metrics()
            await events.handle("turnwatch.scores", record)
            await events.drain(10)
            expected = len(list(record.results())) + 2
            assert counted(registry) == {"exported": 0, "failed": expected, "queue_full": 0}
    finally:
        refusing.server.shutdown()
        refusing.server.server_close()


async def test_events_past_the_queue_bound_are_dropped_and_counted(receiver):
    registry = CollectorRegistry()
    events = events_for(receiver.url, registry, max_queued_events=3)
    record = record_with_metrics()

    await events.handle("turnwatch.scores", record)
    await events.drain(10)

    dropped = len(list(record.results())) + 2 - 3
    assert counted(registry) == {"exported": 3, "failed": 0, "queue_full": dropped}
    assert len(receiver.events) == 3


def test_the_exporter_role_sends_events_only_when_an_endpoint_is_set(tmp_path):
    default = load_settings(None, {"data_dir": str(tmp_path)})
    assert build_exporters(default, CollectorRegistry()).events is None
    configured = load_settings(
        None,
        {
            "data_dir": str(tmp_path),
            "exporter.evaluation_events": {"endpoint": "http://backend:4318/v1/logs"},
        },
    )
    assert build_exporters(configured, CollectorRegistry()).events is not None
