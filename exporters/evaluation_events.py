"""Scores as standard telemetry: each check result and judge metric of a score record as an
OpenTelemetry `gen_ai.evaluation.result` event, sent as OTLP/HTTP logs to any backend.

The event carries the semantic conventions' attributes (`gen_ai.evaluation.name`,
`gen_ai.evaluation.score.value`, `gen_ai.evaluation.score.label`,
`gen_ai.evaluation.explanation`, `error.type` for an unscored result) and turnwatch's
provenance (`turnwatch.*`: session id and revision, the chatbot's service, contract, evaluator,
level). Ids are the keyed ones of the records: nothing here links back to a raw conversation.

The request is built with the OTLP protobuf messages and posted with httpx rather than through
the SDK's logs API, which changed shape across the SDK versions turnwatch supports. Sending runs
in one background task beside the bus handler, which queues; the queue is bounded and a handler
that finds it full waits for room (back-pressure onto the consumer, never a drop), and every
request has a deadline. Each part of a revision is sent once per process, however often the bus
delivers it.

Nothing accepted is lost: on Kafka, and on the embedded bus with its spool, the exporter consumer
has an `OffsetLedger`, and a score record is held there (as the sessionizer holds observations)
from the moment its events are queued until every part it produced is settled: accepted by the
backend and marked sent, or refused for good and counted. The bus commits no offset at or above
a held record (the embedded spool does not move its cursor past one), so a member killed with
events queued, or in flight, leaves those records to the partition's next owner (the restarted
process), which sends them. What a backend's answer means follows the OTLP/HTTP specification:
429, 502, 503 and 504 (Retry-After honoured) and no answer at all are sent again, with backoff,
for as long as they last (the record stays held; the queue fills; the handler waits); any other
4xx or 5xx is refused for good: counted as `refused`, not sent again by this process, and not
marked, so a record redelivered to another member tries once more. Why drop a refusal rather than
retry it: the same bytes get the same answer (a malformed or oversized request, a wrong token),
and retrying it forever would stall every other record of the partition behind it; the
specification forbids the retry for the same reason. The embedded bus in memory takes no ledger
(its queue dies with the process anyway): there a kill loses what was queued, a shutdown counts
it (`unsent_at_shutdown`).

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
from prometheus_client import CollectorRegistry, Counter, Gauge
from turnwatch.exporters.config import EvaluationEventsConfig
from turnwatch.exporters.score_exporter import parts_of
from turnwatch.exporters.sessions.claims import PartKey, SentMarks

from turnwatch import __version__
from turnwatch.bus.ledger import OffsetLedger, Position
from turnwatch.bus.records import ExporterRecord, Output
from turnwatch.retry import Backoff, Retryable, retry, retry_after
from turnwatch.revisions import SeenRevisions
from turnwatch.scores import CheckResult, Score, ScoreRecord, Status

log = logging.getLogger("turnwatch.exporters.evaluation_events")

EVENT_NAME = "gen_ai.evaluation.result"
SCOPE = "turnwatch.evaluation"
Attribute = str | int | float | bool
Event = dict[str, Attribute | None]
"""An event's attributes; None values are left out."""
EVENT_IDS = uuid.UUID("5d1c3a52-7e0b-4c4e-9a51-2f6c1b0e7d93")
"""The namespace of the events' name-based (version 5) ids."""
OUTCOMES = ("exported", "refused", "already_sent", "unsent_at_shutdown")
RETRY_REASONS = ("status", "transport")
RETRYABLE_STATUS = frozenset({429, 502, 503, 504})
"""The OTLP/HTTP specification's retryable answers; it forbids retrying any other 4xx or 5xx."""
BACKOFF = Backoff(retries=5, first_delay=0.5, longest_wait=30.0)
"""One round of retries (about 8-15 s); after it, another round every 30 s while it lasts."""


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
            "gen_ai.evaluation.result events, by outcome (exported, refused, already_sent, "
            "unsent_at_shutdown).",
            ["outcome"],
            registry=registry,
        )
        self.retries = Counter(
            "turnwatch_evaluation_request_retries_total",
            "Evaluation event requests sent again, by reason (status: 429, 502, 503 or 504; "
            "transport: no answer in time or no connection).",
            ["reason"],
            registry=registry,
        )
        self.queued = Gauge(
            "turnwatch_evaluation_events_queued",
            "Evaluation events waiting to be sent or being sent.",
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
        ledger: OffsetLedger | None = None,
    ) -> None:
        """`marks`, the session store's sent marks when it is on: which parts another member
        (or this one before a restart) already sent. `ledger`, the exporter consumer's on Kafka
        or the spooled embedded bus: each record is held there until its events are settled."""
        assert config.endpoint is not None, "built only when an endpoint is configured"
        self.config = config
        self.endpoint = config.endpoint
        self.marks = marks
        self.ledger = ledger
        self.metrics = EvaluationMetrics(registry)
        for outcome in OUTCOMES:
            self.metrics.events.labels(outcome)
        for reason in RETRY_REASONS:
            self.metrics.retries.labels(reason)
        for step in ("read", "mark"):
            self.metrics.mark_failures.labels(step)
        self.revisions = SeenRevisions(config.dedupe_entries)
        """Parts settled here (accepted, refused or found marked): not sent again."""
        self.queue: deque[tuple[PartKey, LogRecord]] = deque()
        self.unsent = Tally[PartKey]()
        """Events of each part not settled yet (waiting for room, queued or being sent); the
        part is settled when it reaches 0."""
        self.refused: set[PartKey] = set()
        """Parts with an event refused: settled but never marked, so a redelivery elsewhere
        tries them again."""
        self.holders: dict[PartKey, list[Position]] = {}
        """The deliveries of each unsettled part held in the ledger, released when it settles."""
        self.room = asyncio.Event()
        """Set while the queue has room; the handler waits on it (back-pressure)."""
        self.room.set()
        self.closed = False
        """Set at shutdown once the sender stopped: what comes after is left to the next owner."""
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
        position = self.ledger.in_hand() if self.ledger is not None else None
        wanted: set[str] = set()
        for part in parts_of(record):
            key = (record.session_id, record.revision, part)
            if key in self.unsent:
                self._hold(key, position)  # still being sent here: released with it
            elif not self.revisions.seen(*key):
                wanted.add(part)
        events = record_events(record, "checks" in wanted, "judged" in wanted)
        sent = await self._sent(record) if events else frozenset()
        by_part: dict[PartKey, list[LogRecord]] = {}
        for part, event in events:
            key = (record.session_id, record.revision, part)
            if part in sent:
                self.metrics.events.labels("already_sent").inc()
            else:
                by_part.setdefault(key, []).append(event)
        for part in wanted:
            key = (record.session_id, record.revision, part)
            if key not in by_part:
                self.revisions.add(*key)  # found marked, or no events to send
        for key, part_events in by_part.items():
            self._hold(key, position)
            if self.closed:
                self.metrics.events.labels("unsent_at_shutdown").inc(len(part_events))
                continue
            # Counted in full before the first is queued: a part settles only once all are.
            self.unsent[key] += len(part_events)
            self.metrics.queued.inc(len(part_events))
            await self._enqueue(key, part_events)
        return ()

    def _hold(self, key: PartKey, position: Position | None) -> None:
        if position is not None and self.ledger is not None:
            self.ledger.hold(position)
            self.holders.setdefault(key, []).append(position)

    async def _enqueue(self, key: PartKey, events: list[LogRecord]) -> None:
        """Queue the events, waiting while the queue is full. A shutdown meanwhile leaves the
        rest (counted by `drain`) to the next owner: the record stays held."""
        for event in events:
            while len(self.queue) >= self.config.max_queued_events and not self.closed:
                self.room.clear()
                await self.room.wait()
            if self.closed:
                return
            self.queue.append((key, event))
            self.idle.clear()
            if self.sender is None or self.sender.done():
                self.sender = asyncio.create_task(self._send_forever())
            self.wake.set()

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
        self.room.set()
        accepted = await self._deliver(client, [event for _, event in batch])
        self.metrics.events.labels("exported" if accepted else "refused").inc(len(batch))
        settled: set[PartKey] = set()
        for key, _ in batch:
            if not accepted:
                self.refused.add(key)
            self.unsent[key] -= 1
            if self.unsent[key] == 0:
                del self.unsent[key]
                settled.add(key)
                self.revisions.add(*key)
        self.metrics.queued.dec(len(batch))
        await self._mark(settled - self.refused)
        self.refused -= settled
        if self.ledger is not None:
            for key in settled:
                self.ledger.release(self.holders.pop(key, ()))

    async def _deliver(self, client: httpx.AsyncClient, batch: list[LogRecord]) -> bool:
        """Post until the backend answers for good: True accepted, False refused. Unreachable
        or asking for a retry (the OTLP specification's retryable answers), the batch is sent
        again, however long that takes: its records stay held, and the queue fills behind it
        until the handler waits."""
        while True:
            outcome = await retry(
                lambda: self._post(client, batch), BACKOFF, log, "evaluation events"
            )
            if not isinstance(outcome, Retryable):
                return outcome
            await asyncio.sleep(BACKOFF.longest_wait)

    async def _post(self, client: httpx.AsyncClient, batch: list[LogRecord]) -> bool | Retryable:
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
        except httpx.HTTPError as exc:
            self.metrics.retries.labels("transport").inc()
            log.warning("evaluation events not sent", extra={"error": type(exc).__name__})
            return Retryable("transport")
        if answer.status_code < 300:
            return True
        if answer.status_code in RETRYABLE_STATUS:
            self.metrics.retries.labels("status").inc()
            log.warning("evaluation events deferred", extra={"status": answer.status_code})
            return Retryable("status", retry_after(answer))
        log.warning("evaluation events refused", extra={"status": answer.status_code})
        return False

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
        """At shutdown: send what is queued, within `timeout`, then stop the sender. What is
        left is counted; its records stay held (not committed), so the next owner sends it."""
        if self.sender is not None:
            try:
                await asyncio.wait_for(self.idle.wait(), timeout)
            except TimeoutError:
                log.warning("evaluation events not all sent at shutdown")
            self.sender.cancel()
            await asyncio.gather(self.sender, return_exceptions=True)
            self.sender = None
        self.closed = True
        self.room.set()
        left = sum(self.unsent.values())
        if left:
            self.metrics.events.labels("unsent_at_shutdown").inc(left)
        self.queue.clear()
        self.unsent.clear()
        self.refused.clear()
        self.holders.clear()
        self.metrics.queued.set(0)
