"""No judge holds back a deterministic result: the running service (embedded bus, every role) with
its judge endpoint on a real loopback server that drips its answers or answers NaN.

The checks part of each score record must reach the exporter within 30 s of the spans (measured
on the arrival itself, no sleeps), while the judge is still stuck; the judge metrics follow as the
judged part, unscored with a reason; the exporter counts the session once; `/readyz` and the
judge gauges show the stuck judge while it is stuck.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from prometheus_client import CollectorRegistry
from turnwatch.scorers.config import ScorerConfig
from turnwatch.scorers.judge.evaluate import JudgeEvaluator
from turnwatch.scorers.runner import Scorer, bus_processor

from tests.conftest import make_settings
from tests.otlp_requests import LOOPBACK, PROTOBUF, chat_span, encode, metric_value, trace_request
from tests.stages import all_roles_raw
from tests.test_judge_loopback import (
    LoopbackJudge,
    Reply,
    auto_answer,
    prompt_of,
    running,
    score_logprobs,
)
from tests.test_scorers_builders import bot, session, user
from tests.waiting import eventually
from turnwatch.app.serve import BackgroundService, Service
from turnwatch.bus.config import BusConfig
from turnwatch.bus.embedded import EmbeddedBus
from turnwatch.bus.metrics import BusMetrics
from turnwatch.bus.records import SCORES, ExporterRecord, Output
from turnwatch.scores import Part, ScoreRecord

DETERMINISTIC_BOUND_SECONDS = 30.0
CALLING = {"turn_relevancy", "conversation_completeness"}
"""The metrics that ask the judge about a one-exchange session without a contract."""
DEADLINE_REASONS = {
    "the judge endpoint answered too slowly (request deadline)",
    "judging the session took longer than its deadline",
}


class Arrivals:
    """Exporter-side tap: each score record with the moment it arrived."""

    def __init__(self) -> None:
        self.records: list[tuple[float, ScoreRecord]] = []

    async def __call__(self, topic: str, record: ExporterRecord) -> list[Output]:
        if isinstance(record, ScoreRecord):
            self.records.append((time.monotonic(), record))
        return []

    def part(self, session: str, which: Part) -> list[tuple[float, ScoreRecord]]:
        return [(at, r) for at, r in self.records if r.part is which and r.session_id == session]


@pytest.fixture
def judge() -> Iterator[LoopbackJudge]:
    with running() as server:
        yield server


def judge_settings(server: LoopbackJudge, endpoint: dict[str, Any] | None = None, **judge: Any):
    """Requests cut at 1.5 s (three attempts), sessions at 6 s, stuck after 2 s unanswered."""
    endpoint = {
        "base_url": server.base_url,
        "api_key_env": None,
        "timeout_seconds": 1.0,
        "request_deadline_seconds": 1.5,
        "max_retries": 2,
        "backoff_seconds": 0.01,
        "requests_per_second": 1000,
        "stuck_after_seconds": 2.0,
        **(endpoint or {}),
    }
    config = {"session_deadline_seconds": 6.0, "endpoint": endpoint, **judge}
    overrides = {
        "otlp.grpc_enabled": False,
        "bus.shutdown_timeout_seconds": 2.0,
        "scorers.judge": config,
        "exporter.services": ["support-bot"],  # one session takes no label slot by traffic
    }
    return make_settings(**overrides)


def send(service: Service, conversation: str) -> float:
    """Post one conversation's span; the moment the collector took it."""
    body = encode(trace_request([chat_span(conversation)], "support-bot"), PROTOBUF)
    answer = LOOPBACK.post(
        f"http://127.0.0.1:{service.ports.otlp_http}/v1/traces",
        content=body,
        headers={"Content-Type": PROTOBUF},
    )
    assert answer.status_code == 200
    return time.monotonic()


def session_id_of(arrivals: Arrivals) -> str:
    [(_, first)] = eventually(
        lambda: list(arrivals.records), timeout=DETERMINISTIC_BOUND_SECONDS, what="a score record"
    )
    return first.session_id


def readyz(ops: str) -> tuple[int, str]:
    answer = LOOPBACK.get(f"{ops}/readyz", timeout=10)
    return answer.status_code, answer.text


def test_a_dripping_judge_delays_no_deterministic_result(judge):
    judge.responder = lambda request: Reply(drip=0.2)  # a byte every 0.2 s: no read times out
    arrivals = Arrivals()
    background = BackgroundService(judge_settings(judge), all_roles_raw(tap=arrivals))
    service = background.start()
    ops = f"http://127.0.0.1:{service.ports.ops}"
    try:
        sent = send(service, "drip-conv")
        session = session_id_of(arrivals)
        [(checked_at, checks)] = arrivals.part(session, Part.CHECKS)
        assert checked_at - sent < DETERMINISTIC_BOUND_SECONDS
        assert checks.metrics == [] and checks.results()
        # The judge is still being asked when the checks are out, and is seen to be stuck.
        assert arrivals.part(session, Part.JUDGED) == []
        assert metric_value(ops, "turnwatch_judge_sessions_inflight") == 1
        _, text = eventually(
            lambda: readyz(ops), lambda got: got[0] == 503, timeout=10, what="/readyz failing"
        )
        assert "judge" in text and "unanswered" in text
        assert metric_value(ops, "turnwatch_judge_unanswered_seconds") > 2
        [(judged_at, judged)] = eventually(
            lambda: arrivals.part(session, Part.JUDGED), timeout=30, what="the judged part"
        )
        assert eventually(lambda: readyz(ops), lambda got: got[0] == 200, timeout=10)
        scored = metric_value(ops, "turnwatch_sessions_scored_total", service="support-bot")
        unscored = metric_value(ops, "turnwatch_metric_unscored_total", service="support-bot")
        sessions = {
            outcome: metric_value(ops, "turnwatch_judge_sessions_total", outcome=outcome)
            for outcome in ("complete", "session_deadline")
        }
        deadline_errors = metric_value(ops, "turnwatch_judge_errors_total", reason="deadline")
        score_count = metric_value(ops, "turnwatch_session_score_count")
    finally:
        background.stop()

    assert judged_at > checked_at
    assert judged.results() == checks.results()  # the same checks, repeated
    for score in judged.metrics:
        assert score.value is None, score
    called = {
        score.name: score.unscored_reason for score in judged.metrics if score.name in CALLING
    }
    assert called.keys() == CALLING and set(called.values()) <= DEADLINE_REASONS
    assert deadline_errors >= 1 and sum(sessions.values()) == 1
    # One session revision: its checks counted once, each judge metric once, no score observed.
    assert scored == 1 and unscored == len(judged.metrics) and score_count == 0


def nan_logprobs(request: dict[str, Any]) -> Reply:
    """Valid verdicts, and a NaN at the G-Eval score token (as a string, which float() reads)."""
    content = auto_answer(request, set(), set())
    if not prompt_of(request).startswith("Task: score a conversation"):
        return Reply(content=content)
    top = [{"token": "7", "logprob": "NaN"}, {"token": "8", "logprob": -1.0}]
    return Reply(content=content, logprobs=score_logprobs(top))


def test_a_nan_from_the_judge_costs_one_metric_not_the_record(judge):
    judge.responder = nan_logprobs
    arrivals = Arrivals()
    geval = [{"name": "polite", "criteria": "The assistant is polite."}]
    settings = judge_settings(judge, geval=geval)
    background = BackgroundService(settings, all_roles_raw(tap=arrivals))
    service = background.start()
    ops = f"http://127.0.0.1:{service.ports.ops}"
    try:
        sent = send(service, "nan-conv")
        session = session_id_of(arrivals)
        [(_, judged)] = eventually(
            lambda: arrivals.part(session, Part.JUDGED), timeout=30, what="the judged part"
        )
        [(checked_at, checks)] = arrivals.part(session, Part.CHECKS)
        non_finite = metric_value(ops, "turnwatch_judge_errors_total", reason="non_finite")
        dead_letters = metric_value(ops, "turnwatch_bus_dead_letter_total")
        scored = metric_value(ops, "turnwatch_sessions_scored_total", service="support-bot")
    finally:
        background.stop()

    assert checked_at - sent < DETERMINISTIC_BOUND_SECONDS and checks.results()
    by_name = {score.name: score for score in judged.metrics}
    polite = by_name.pop("geval.polite")
    assert polite.value is None
    assert polite.unscored_reason == "the judge answered a number that is not finite"
    assert by_name["turn_relevancy"].value is not None  # the other metrics are untouched
    assert non_finite == 1 and dead_letters == 0 and scored == 1


def test_a_full_backlog_unscores_the_judge_metrics_at_once(judge):
    judge.responder = lambda request: Reply(drip=0.2)
    arrivals = Arrivals()
    settings = judge_settings(judge, max_sessions_in_flight=1)
    background = BackgroundService(settings, all_roles_raw(tap=arrivals))
    service = background.start()
    ops = f"http://127.0.0.1:{service.ports.ops}"
    try:
        send(service, "backlog-one")
        first = session_id_of(arrivals)
        send(service, "backlog-two")
        complete = eventually(
            lambda: [r for _, r in arrivals.records if r.part is Part.COMPLETE],
            timeout=DETERMINISTIC_BOUND_SECONDS,
            what="the second session's record",
        )
        full = metric_value(ops, "turnwatch_judge_sessions_total", outcome="backlog_full")
    finally:
        background.stop()

    [second] = complete
    assert second.session_id != first and second.metrics
    for score in second.metrics:
        assert score.value is None
        assert score.unscored_reason == "too many sessions waiting for the judge"
    assert full == 1


def test_shutdown_publishes_the_sessions_still_being_judged(judge):
    judge.responder = lambda request: Reply(drip=0.2)
    arrivals = Arrivals()
    settings = judge_settings(
        judge, {"request_deadline_seconds": 60.0}, session_deadline_seconds=120.0
    )
    background = BackgroundService(settings, all_roles_raw(tap=arrivals))
    service = background.start()
    send(service, "shutdown-conv")
    session = session_id_of(arrivals)
    started = time.monotonic()
    background.stop()
    stopped = time.monotonic() - started

    [(_, judged)] = arrivals.part(session, Part.JUDGED)
    reasons = {score.unscored_reason for score in judged.metrics if score.name in CALLING}
    assert reasons == {"the scorer stopped before the judge answered"}
    assert stopped < 30  # the backlog's drain is bounded by bus.shutdown_timeout_seconds
    registry = service.registry
    assert registry.get_sample_value("turnwatch_judge_sessions_total", {"outcome": "shutdown"}) == 1


async def test_a_judged_part_too_large_for_the_bus_is_counted(judge):
    registry = CollectorRegistry()
    config = ScorerConfig.model_validate(
        {"judge": {"endpoint": {"base_url": judge.base_url, "api_key_env": None}}}
    )
    scorer = Scorer(config, judge=JudgeEvaluator(config.judge, registry))
    chat = session(user("I want a refund"), bot("Which order?"), user("4411"), bot("Done."))
    checks = scorer.score(chat).model_copy(update={"part": Part.CHECKS})
    # Room for the checks part, not for the same record with the judge metrics filled in.
    limit = len(checks.model_dump_json()) + 64
    bus = EmbeddedBus(BusConfig(max_record_bytes=limit), BusMetrics(registry), None)
    process = bus_processor(scorer, publish=bus.publish)
    assert await process(chat) == []
    await process.drain(30)
    rejected = {"topic": SCORES, "reason": "too_large"}
    counted = {
        "publish_failed": ("turnwatch_judge_sessions_total", {"outcome": "publish_failed"}),
        "too_large": ("turnwatch_bus_records_rejected_total", rejected),
        "produced": ("turnwatch_bus_records_produced_total", {"topic": SCORES}),
    }
    assert {key: registry.get_sample_value(*sample) for key, sample in counted.items()} == {
        "publish_failed": 1,
        "too_large": 1,
        "produced": 1,  # the checks part
    }
