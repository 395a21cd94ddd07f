"""Scores as standard telemetry: each check result and judge metric of a score record as an
OpenTelemetry `gen_ai.evaluation.result` event, sent as OTLP/HTTP logs to any backend.

The event carries the semantic conventions' attributes (`gen_ai.evaluation.name`,
`gen_ai.evaluation.score.value`, `gen_ai.evaluation.score.label`,
`gen_ai.evaluation.explanation`, `error.type` for an unscored result) and turnwatch's
provenance (`turnwatch.*`: session id and revision, the chatbot's service, contract, evaluator,
level). Ids are the keyed ones of the records: nothing here links back to a raw conversation.

The request is built with the OTLP protobuf messages and posted with httpx rather than through
the SDK's logs API, which changed shape across the SDK versions turnwatch supports. Sending runs
in one background task: the bus handler only queues, the queue is bounded (overflow counted as
`queue_full`), every request has a deadline, and a failed request is counted and not retried
(the records stay on `turnwatch.scores` for a replay). Each part of a revision is sent once,
however often the bus delivers it.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Sequence

import httpx
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord
from prometheus_client import CollectorRegistry, Counter
from turnwatch.exporters.config import EvaluationEventsConfig

from turnwatch import __version__
from turnwatch.bus.records import ExporterRecord, Output
from turnwatch.revisions import SeenRevisions
from turnwatch.scores import CheckResult, Part, Score, ScoreRecord, Status

log = logging.getLogger("turnwatch.exporters.evaluation_events")

EVENT_NAME = "gen_ai.evaluation.result"
SCOPE = "turnwatch.evaluation"
Attribute = str | int | float | bool
Event = dict[str, Attribute | None]
"""An event's attributes; None values are left out."""


def _value(value: Attribute) -> AnyValue:
    if isinstance(value, bool):
        return AnyValue(bool_value=value)
    if isinstance(value, int):
        return AnyValue(int_value=value)
    if isinstance(value, float):
        return AnyValue(double_value=value)
    return AnyValue(string_value=value)


def _attributes(values: dict[str, Attribute | None]) -> list[KeyValue]:
    return [KeyValue(key=k, value=_value(v)) for k, v in values.items() if v is not None]


def _provenance(record: ScoreRecord, evaluator: str, level: str) -> Event:
    contract = record.contract
    return {
        "turnwatch.session.id": record.session_id,
        "turnwatch.session.revision": record.revision,
        "turnwatch.service": record.service,
        "turnwatch.contract.id": contract.id if contract else None,
        "turnwatch.contract.version": contract.version if contract else None,
        "turnwatch.evaluator": evaluator,
        "turnwatch.evaluation.level": level,
    }


def check_event(record: ScoreRecord, level: str, result: CheckResult) -> Event:
    """One deterministic check: its status is the label, its findings the explanation."""
    explanation = "; ".join(finding.explanation for finding in result.findings[:3])
    return {
        "gen_ai.evaluation.name": result.check,
        "gen_ai.evaluation.score.value": result.value,
        "gen_ai.evaluation.score.label": result.status.value,
        "gen_ai.evaluation.explanation": result.unscored_reason or explanation or None,
        "error.type": "unscored" if result.status is Status.UNSCORED else None,
        **_provenance(record, "turnwatch.check", level),
    }


def metric_event(record: ScoreRecord, score: Score) -> Event:
    """One judge metric: unscored carries its reason, never a value of 0."""
    judge = score.metadata.get("judge")
    unscored = score.metadata.get("unscored")
    return {
        "gen_ai.evaluation.name": score.name,
        "gen_ai.evaluation.score.value": score.value,
        "gen_ai.evaluation.score.label": "unscored" if score.value is None else None,
        "gen_ai.evaluation.explanation": score.unscored_reason or score.explanation,
        "error.type": (str(unscored) if unscored else "unscored") if score.value is None else None,
        **_provenance(record, f"turnwatch.judge.{judge}" if judge else "turnwatch.judge", "judge"),
    }


def record_events(record: ScoreRecord, checks: bool, judged: bool) -> list[LogRecord]:
    """The events of the parts of `record` not sent before."""
    events = []
    if checks:
        for level, results in (
            ("turn", record.turn_level),
            ("trajectory", record.trajectory_level),
            ("session", record.session_level),
        ):
            events += [check_event(record, level, result) for result in results]
    if judged:
        events += [metric_event(record, score) for score in record.metrics]
    time_ns = int(record.scored_at.timestamp() * 1e9)
    logs = []
    for attributes in events:
        log_record = LogRecord(
            time_unix_nano=time_ns,
            observed_time_unix_nano=time_ns,
            attributes=_attributes({"event.name": EVENT_NAME, **attributes}),
        )
        log_record.event_name = EVENT_NAME
        logs.append(log_record)
    return logs


class EvaluationMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.events = Counter(
            "turnwatch_evaluation_events_total",
            "gen_ai.evaluation.result events, by outcome (exported, failed, queue_full).",
            ["outcome"],
            registry=registry,
        )


class EvaluationEvents:
    """The exporter role's evaluation-event sender (a `RecordHandler` plus a drain)."""

    def __init__(self, config: EvaluationEventsConfig, registry: CollectorRegistry) -> None:
        assert config.endpoint is not None, "built only when an endpoint is configured"
        self.config = config
        self.endpoint = config.endpoint
        self.metrics = EvaluationMetrics(registry)
        for outcome in ("exported", "failed", "queue_full"):
            self.metrics.events.labels(outcome)
        self.revisions = SeenRevisions(config.dedupe_entries)
        self.queue: deque[LogRecord] = deque()
        self.wake = asyncio.Event()
        self.idle = asyncio.Event()
        """Set while nothing is queued or being sent."""
        self.idle.set()
        self.sender: asyncio.Task | None = None
        resource = {"service.name": "turnwatch", "service.version": __version__}
        self.resource = _attributes(dict(resource))

    async def handle(self, topic: str, record: ExporterRecord) -> Sequence[Output]:
        if not isinstance(record, ScoreRecord):
            return ()
        checks = record.part is not Part.JUDGED and self.revisions.first_time(
            record.session_id, record.revision, "checks"
        )
        judged = record.part is not Part.CHECKS and self.revisions.first_time(
            record.session_id, record.revision, "judged"
        )
        for event in record_events(record, checks, judged):
            if len(self.queue) >= self.config.max_queued_events:
                self.metrics.events.labels("queue_full").inc()
                continue
            self.queue.append(event)
        if self.queue:
            self.idle.clear()
            if self.sender is None or self.sender.done():
                self.sender = asyncio.create_task(self._send_forever())
            self.wake.set()
        return ()

    async def _send_forever(self) -> None:
        async with httpx.AsyncClient(timeout=self.config.timeout_seconds) as client:
            while True:
                await self.wake.wait()
                self.wake.clear()
                while self.queue:
                    await self._send_batch(client)
                self.idle.set()

    async def _send_batch(self, client: httpx.AsyncClient) -> None:
        batch = [self.queue.popleft() for _ in range(min(len(self.queue), self.config.max_batch))]
        request = ExportLogsServiceRequest()
        resource_logs = request.resource_logs.add()
        resource_logs.resource.attributes.extend(self.resource)
        scope_logs = resource_logs.scope_logs.add()
        scope_logs.scope.name, scope_logs.scope.version = SCOPE, __version__
        scope_logs.log_records.extend(batch)
        headers = {k: v.get_secret_value() for k, v in self.config.headers.items()}
        headers["content-type"] = "application/x-protobuf"
        try:
            answer = await client.post(
                self.endpoint, content=request.SerializeToString(), headers=headers
            )
            ok = answer.status_code < 300
        except httpx.HTTPError as exc:
            log.warning("evaluation events not sent", extra={"error": type(exc).__name__})
            ok = False
        else:
            if not ok:
                log.warning("evaluation events refused", extra={"status": answer.status_code})
        self.metrics.events.labels("exported" if ok else "failed").inc(len(batch))

    async def drain(self, timeout: float) -> None:
        """At shutdown: send what is queued, within `timeout`, then stop the sender."""
        if self.sender is None:
            return
        try:
            await asyncio.wait_for(self.idle.wait(), timeout)
        except TimeoutError:
            log.warning("evaluation events not all sent at shutdown")
        self.sender.cancel()
        await asyncio.gather(self.sender, return_exceptions=True)
        # What is still queued after the deadline is not sent: count it.
        if self.queue:
            self.metrics.events.labels("failed").inc(len(self.queue))
            self.queue.clear()
