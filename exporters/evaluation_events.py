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
(the records stay on `turnwatch.scores` for a replay). Each part of a revision is sent once
per process, however often the bus delivers it.

Across exporter members (a record redelivered to a partition's next owner after a kill or a
revocation) two things make the events come out once. Every event has a deterministic identity,
`log.record.uid` (the semantic conventions' attribute for it: records with the same id are
duplicates a receiver may drop), derived from the session id, revision, level, evaluator and
name, so both members send the same id and a backend or collector that deduplicates keeps one.
And with the session store on, a part is marked sent in the store (`sessions/claims.py`,
`SentMarks`) once the backend accepted all its events; a member that takes a record sends only
the parts not marked. It does not skip a part whose count claim exists: the member that claimed
it may have died before sending. So events are at-least-once with a stable id: sent again only
when no mark says they were sent (the first member was killed between send and mark, or the
store could not be written, `turnwatch_evaluation_sent_mark_failures_total`).
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections import Counter as Tally
from collections import deque
from collections.abc import Sequence

import httpx
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord
from prometheus_client import CollectorRegistry, Counter
from turnwatch.exporters.config import EvaluationEventsConfig
from turnwatch.exporters.sessions.claims import PartKey, SentMarks

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
EVENT_IDS = uuid.UUID("5d1c3a52-7e0b-4c4e-9a51-2f6c1b0e7d93")
"""The namespace of the events' name-based (version 5) ids."""
OUTCOMES = ("exported", "failed", "queue_full", "already_sent")


def event_id(record: ScoreRecord, event: Event) -> str:
    """The same on every member for one result of one revision, different for any other."""
    key = (
        record.session_id,
        record.revision,
        event["turnwatch.evaluation.level"],
        event["turnwatch.evaluator"],
        event["gen_ai.evaluation.name"],
    )
    return str(uuid.uuid5(EVENT_IDS, "\x1f".join(str(part) for part in key)))


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


def record_events(record: ScoreRecord, checks: bool, judged: bool) -> list[tuple[str, LogRecord]]:
    """The events of the parts of `record` not sent before, each with its part."""
    events: list[tuple[str, Event]] = []
    if checks:
        for level, results in (
            ("turn", record.turn_level),
            ("trajectory", record.trajectory_level),
            ("session", record.session_level),
        ):
            events += [("checks", check_event(record, level, result)) for result in results]
    if judged:
        events += [("judged", metric_event(record, score)) for score in record.metrics]
    time_ns = int(record.scored_at.timestamp() * 1e9)
    logs = []
    for part, attributes in events:
        identity = {"event.name": EVENT_NAME, "log.record.uid": event_id(record, attributes)}
        log_record = LogRecord(
            time_unix_nano=time_ns,
            observed_time_unix_nano=time_ns,
            attributes=_attributes({**identity, **attributes}),
        )
        log_record.event_name = EVENT_NAME
        logs.append((part, log_record))
    return logs


class EvaluationMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.events = Counter(
            "turnwatch_evaluation_events_total",
            "gen_ai.evaluation.result events, by outcome (exported, failed, queue_full, "
            "already_sent).",
            ["outcome"],
            registry=registry,
        )
        self.mark_failures = Counter(
            "turnwatch_evaluation_sent_mark_failures_total",
            "Reads and writes of the session store's sent marks that failed, by step (read, "
            "mark); the events are sent (again) rather than lost.",
            ["step"],
            registry=registry,
        )


class EvaluationEvents:
    """The exporter role's evaluation-event sender (a `RecordHandler` plus a drain)."""

    def __init__(
        self,
        config: EvaluationEventsConfig,
        registry: CollectorRegistry,
        marks: SentMarks | None = None,
    ) -> None:
        """`marks`, the session store's sent marks when it is on: which parts another member
        (or this one before a restart) already sent."""
        assert config.endpoint is not None, "built only when an endpoint is configured"
        self.config = config
        self.endpoint = config.endpoint
        self.marks = marks
        self.metrics = EvaluationMetrics(registry)
        for outcome in OUTCOMES:
            self.metrics.events.labels(outcome)
        for step in ("read", "mark"):
            self.metrics.mark_failures.labels(step)
        self.revisions = SeenRevisions(config.dedupe_entries)
        self.queue: deque[tuple[PartKey, LogRecord]] = deque()
        self.unsent = Tally[PartKey]()
        """Events of each part queued or being sent; a part is marked when it reaches 0."""
        self.lost: set[PartKey] = set()
        """Parts with an event dropped or refused: never marked, so a redelivery sends them."""
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
        events = record_events(record, checks, judged)
        sent = await self._sent(record) if events else frozenset()
        for part, event in events:
            key = (record.session_id, record.revision, part)
            if part in sent:
                self.metrics.events.labels("already_sent").inc()
            elif len(self.queue) >= self.config.max_queued_events:
                self.metrics.events.labels("queue_full").inc()
                self.lost.add(key)
            else:
                self.queue.append((key, event))
                self.unsent[key] += 1
        # A part none of whose events were queued is never marked anyway.
        self.lost.intersection_update(self.unsent)
        if self.queue:
            self.idle.clear()
            if self.sender is None or self.sender.done():
                self.sender = asyncio.create_task(self._send_forever())
            self.wake.set()
        return ()

    async def _sent(self, record: ScoreRecord) -> frozenset[str]:
        """The record's parts the store marks sent; none when it cannot be read (the events
        go out again, with their ids, rather than not at all)."""
        if self.marks is None:
            return frozenset()
        try:
            return await asyncio.to_thread(self.marks.sent, record.session_id, record.revision)
        except Exception as exc:
            self.metrics.mark_failures.labels("read").inc()
            log.error(
                "sent marks unreadable: evaluation events sent without checking them",
                extra={"error": type(exc).__name__},
            )
            return frozenset()

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
        ok = await self._post(client, [event for _, event in batch])
        self.metrics.events.labels("exported" if ok else "failed").inc(len(batch))
        done: set[PartKey] = set()
        for key, _ in batch:
            if not ok:
                self.lost.add(key)
            self.unsent[key] -= 1
            if self.unsent[key] == 0:
                del self.unsent[key]
                done.add(key)
        await self._mark(done - self.lost)
        self.lost -= done

    async def _post(self, client: httpx.AsyncClient, batch: list[LogRecord]) -> bool:
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
        return ok

    async def _mark(self, parts: set[PartKey]) -> None:
        """Mark the parts whose every event was accepted; if the store fails they stay
        unmarked, so the member that takes a redelivered record sends them again."""
        if self.marks is None or not parts:
            return
        try:
            await asyncio.to_thread(self.marks.mark, parts, time.time())
        except Exception as exc:
            self.metrics.mark_failures.labels("mark").inc()
            log.error(
                "evaluation events sent but not marked: a redelivery sends them again",
                extra={"error": type(exc).__name__, "parts": len(parts)},
            )

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
        self.sender = None
        # What is still queued after the deadline is not sent: count it.
        if self.queue:
            self.metrics.events.labels("failed").inc(len(self.queue))
            self.queue.clear()
            self.unsent.clear()
            self.lost.clear()
