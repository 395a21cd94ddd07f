"""Score records as `gen_ai.evaluation.result` events over OTLP/HTTP, into a loopback OTLP logs
receiver that decodes the protobuf requests: one event per check result and judge metric, each
part of a revision sent once however often it is delivered; refusals counted, retryable answers
sent again, a full queue waited on."""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from collections.abc import Iterable, Iterator
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
    """OTLP/HTTP `/v1/logs`: protobuf requests decoded into (resource, scope, attributes).

    It answers `status` (which a test may change), or first the `answers` given, one per
    request; with a `gate`, no request is answered before the gate is set (a stalled backend).
    `events` holds every event received, `accepted` those of requests answered 2xx."""

    def __init__(
        self,
        status: int = 200,
        answers: Iterable[int] = (),
        gate: threading.Event | None = None,
    ) -> None:
        self.status = status
        self.answers = deque(answers)
        self.events: list[dict] = []
        self.accepted: list[dict] = []
        self.requests: list[tuple[int, int]] = []
        """(status answered, events in the request), in order."""
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
                events = []
                for resource_logs in request.resource_logs:
                    receiver.resources.append(_flat(resource_logs.resource.attributes))
                    for scope_logs in resource_logs.scope_logs:
                        for record in scope_logs.log_records:
                            event = _flat(record.attributes)
                            event["_event_name"] = record.event_name
                            event["_scope"] = scope_logs.scope.name
                            events.append(event)
                if gate is not None:
                    gate.wait()
                status = receiver.answers.popleft() if receiver.answers else receiver.status
                receiver.events.extend(events)
                if status < 300:
                    receiver.accepted.extend(events)
                receiver.requests.append((status, len(events)))
                self.send_response(status)
                self.send_header("content-length", "0")
                self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1/logs"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


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


OUTCOMES = ("exported", "refused", "already_sent", "unsent_at_shutdown")


def counted(registry: CollectorRegistry) -> dict[str, float]:
    return {
        outcome: registry.get_sample_value(
            "turnwatch_evaluation_events_total", {"outcome": outcome}
        )
        or 0.0
        for outcome in OUTCOMES
    }


def retries(registry: CollectorRegistry, reason: str) -> float:
    labels = {"reason": reason}
    return registry.get_sample_value("turnwatch_evaluation_request_retries_total", labels) or 0.0


def outcomes(**values: float) -> dict[str, float]:
    return {outcome: values.get(outcome, 0.0) for outcome in OUTCOMES}


def events_for(url: str, registry: CollectorRegistry, **overrides) -> EvaluationEvents:
    config = EvaluationEventsConfig(endpoint=url, headers={"x-api-key": "k-123"}, **overrides)
    return EvaluationEvents(config, registry)


def expected_events(record: ScoreRecord) -> int:
    return len(list(record.results())) + len(record.metrics)


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
    assert counted(registry) == outcomes(exported=expected)
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


async def sent_through(receiver: LogsReceiver, record: ScoreRecord, deliveries: int = 1):
    """The record delivered `deliveries` times to a new sender, drained, the receiver closed."""
    try:
        registry = CollectorRegistry()
        events = events_for(receiver.url, registry)
        for _ in range(deliveries):
            await events.handle("turnwatch.scores", record)
        await events.drain(30)
    finally:
        receiver.close()
    return registry


async def test_a_refusal_is_counted_and_not_sent_again():
    """A 4xx other than 429 (and a 5xx other than 502-504) is final: the same request would be
    refused again, so it is counted and dropped, in one request and no retry."""
    refusing = LogsReceiver(status=400)
    record = record_with_metrics()
    registry = await sent_through(refusing, record, deliveries=2)

    expected = expected_events(record)
    assert refusing.requests == [(400, expected)]
    assert counted(registry) == outcomes(refused=expected)
    assert retries(registry, "status") == 0 == retries(registry, "transport")


async def test_a_retryable_answer_is_sent_again_until_the_backend_accepts_it():
    # 503 and 429 are the OTLP specification's "try again later".
    flaky = LogsReceiver(answers=(503, 429))
    record = record_with_metrics()
    registry = await sent_through(flaky, record)

    expected = expected_events(record)
    assert flaky.requests == [(503, expected), (429, expected), (200, expected)]
    assert len(flaky.accepted) == expected
    assert counted(registry) == outcomes(exported=expected)
    assert retries(registry, "status") == 2


async def test_an_unreachable_backend_is_retried_and_what_is_left_at_shutdown_is_counted():
    registry = CollectorRegistry()
    events = events_for("http://127.0.0.1:9/v1/logs", registry, timeout_seconds=2)
    record = record_with_metrics()

    await events.handle("turnwatch.scores", record)
    await events.drain(1.5)
    await events.handle("turnwatch.scores", record.model_copy(update={"revision": 2}))

    # Nothing is dropped while it retries; at shutdown both records' events are counted unsent.
    assert counted(registry) == outcomes(unsent_at_shutdown=2 * expected_events(record))
    assert retries(registry, "transport") >= 1
    assert registry.get_sample_value("turnwatch_evaluation_events_queued") == 0


async def test_a_full_queue_makes_the_handler_wait_and_nothing_is_dropped():
    gate = threading.Event()
    stalled = LogsReceiver(gate=gate)
    try:
        registry = CollectorRegistry()
        events = events_for(stalled.url, registry, max_queued_events=3, max_batch=3)
        record = record_with_metrics()
        expected = expected_events(record)
        assert expected > 6  # one request in flight, a full queue, and more waiting
        handling = asyncio.create_task(events.handle("turnwatch.scores", record))
        await eventually_async(lambda: len(events.queue) == 3 and len(stalled.headers) == 1)
        assert not handling.done()  # the backend holds the first request: the handler waits
        # The checks part is taken in full; the judged part waits its turn.
        checks = len(list(record.results()))
        assert registry.get_sample_value("turnwatch_evaluation_events_queued") == checks
        gate.set()
        await handling
        await events.drain(10)
    finally:
        gate.set()
        stalled.close()

    assert len(stalled.accepted) == expected
    assert max(size for _, size in stalled.requests) == 3
    assert counted(registry) == outcomes(exported=expected)


async def eventually_async(condition, timeout: float = 10.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "condition not met in time"
        await asyncio.sleep(0.02)


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
