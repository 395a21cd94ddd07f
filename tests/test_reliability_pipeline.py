"""The whole product as separate processes over a real Kafka-protocol broker, numbers reconciled.

A collector, a scorer and an exporter (`turnwatch serve --role ...`, each its own process and data
directory, the shipped contracts) and a scripted support chatbot sending real OTel SDK spans. At
the end every stage's own counters must agree: sessions de-identified by the collector == sessions
the scorer processed == score records the exporter processed, with no duplicates, dead letters or
drops anywhere, and regression cases written for exactly the conversations that broke the contract
(matched through the OTel trace ids, which the pipeline keeps raw).
"""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from turnwatch.collector.deid.config import DeidConfig
from turnwatch.collector.deid.pseudonym import Pseudonymizer

from tests.kafka_broker import read_topic
from tests.otel_chatbot import Exchange, provider_with, run_conversation
from tests.test_bus_kafka import Role
from tests.waiting import eventually
from turnwatch.bus.records import INCIDENTS, SCORES, SESSIONS

pytestmark = pytest.mark.slow  # a Kafka-protocol broker and one subprocess per role

ROOT = Path(__file__).resolve().parent.parent
CONTRACTS = ROOT / "deploy" / "contracts"
SECRET = "reliability-pipeline-secret-0123456789"
ROLE_ENV = {
    "TURNWATCH_SCORERS__CONTRACTS_DIR": str(CONTRACTS),
    # A known key: trace ids in records and cases are keyed with it.
    "TURNWATCH_DEID__SECRET": SECRET,
    # Spans are exported in batches: a conversation must not close between two of them.
    "TURNWATCH_SESSIONS__IDLE_TIMEOUT_SECONDS": "2",
}


def healthy(number: int) -> list[Exchange]:
    order = f"{5100 + number}"
    return [
        Exchange(
            user=f"Hi, where is my order {order}?",
            answer=f"Your order {order} ships tomorrow.",
            tool="lookup_order",
            tool_arguments={"order_id": order},
            tool_result={"status": "packed"},
        ),
        Exchange(
            user="Great, thank you.",
            answer="Glad I could help; I have closed the ticket.",
            tool="record_resolution",
            tool_arguments={"outcome": "resolved"},
            tool_result={"ok": True},
        ),
    ]


def unapproved_refund(number: int) -> list[Exchange]:
    order = f"{6200 + number}"
    return [
        Exchange(
            user=f"My order {order} arrived broken, I want my money back.",
            answer="I have refunded 30 EUR to you.",
            tool="issue_refund",
            tool_arguments={"order_id": order, "amount": 30},
            tool_result={"status": "paid"},
        ),
    ]


def account_deletion(number: int) -> list[Exchange]:
    return [
        Exchange(
            user=f"Please forget everything about me, ticket {number}.",
            answer="Done, your account data is deleted.",
            tool="delete_account_data",
            tool_arguments={},
            tool_result={"deleted": True},
        ),
    ]


CONVERSATIONS: dict[str, list[Exchange]] = {
    **{f"healthy-{n}": healthy(n) for n in range(8)},
    **{f"refund-{n}": unapproved_refund(n) for n in range(2)},
    **{f"delete-{n}": account_deletion(n) for n in range(2)},
}
FAILING = {name for name in CONVERSATIONS if not name.startswith("healthy")}


class TraceIds(SpanProcessor):
    """Which OTel trace ids belong to which conversation, as the chatbot saw them."""

    def __init__(self) -> None:
        self.conversation_of: dict[str, str] = {}

    def on_end(self, span: ReadableSpan) -> None:
        attributes = span.attributes or {}
        conversation = attributes.get("session.id") or attributes.get("gen_ai.conversation.id")
        if conversation is not None and span.context is not None:
            self.conversation_of[format(span.context.trace_id, "032x")] = str(conversation)

    def on_start(self, span: Span, parent_context=None) -> None:
        return None


def consumed(role: Role, topic: str, outcome: str) -> float:
    return role.metric("turnwatch_bus_records_consumed_total", topic=topic, outcome=outcome)


def test_collector_scorer_exporter_processes_reconcile_every_session(bootstrap, tmp_path):
    total, failing = len(CONVERSATIONS), len(FAILING)
    collector = Role("collector", bootstrap, tmp_path / "collector", **ROLE_ENV)
    scorer = Role("scorer", bootstrap, tmp_path / "scorer", **ROLE_ENV)
    exporter = Role("exporter", bootstrap, tmp_path / "exporter", **ROLE_ENV)
    roles = [collector, scorer, exporter]
    traces = TraceIds()
    try:
        for role in roles:
            role.wait_started()
        provider = provider_with(
            BatchSpanProcessor(OTLPSpanExporter(endpoint=f"{collector.otlp}/v1/traces"))
        )
        provider.add_span_processor(traces)
        for number, (name, exchanges) in enumerate(CONVERSATIONS.items()):
            run_conversation(provider, name, exchanges, user_id=f"customer-{number}")
        provider.shutdown()  # flushes: every span is answered before the sessions go idle

        eventually(
            lambda: (
                consumed(exporter, SCORES, "processed"),
                consumed(exporter, INCIDENTS, "processed"),
            ),
            lambda counts: counts[0] >= total and counts[1] >= failing,
            timeout=90,
            interval=0.1,
            what="every score and incident at the exporter",
        )
        cases_dir = tmp_path / "exporter" / "regressions"
        eventually(
            lambda: len(_occurrences(cases_dir)),
            lambda cases: cases >= failing,
            timeout=20,
            interval=0.1,
            what="the regression cases",
        )

        # Collector: every closed session sampled, de-identified and acknowledged by the broker.
        assert collector.metric("turnwatch_sessions_sampled_total", reason="rate") == total
        assert collector.metric("turnwatch_deid_sessions_total") == total
        assert collector.metric("turnwatch_bus_records_produced_total", topic=SESSIONS) == total
        for reason in ("queue_full", "assembly_error", "sink_error"):
            assert collector.metric("turnwatch_handoff_dropped_total", reason=reason) == 0
        # Scorer: each session processed once, one score each, an incident per failing one.
        assert consumed(scorer, SESSIONS, "processed") == total
        assert scorer.metric("turnwatch_bus_records_produced_total", topic=SCORES) == total
        assert scorer.metric("turnwatch_bus_records_produced_total", topic=INCIDENTS) == failing
        # Exporter: the same numbers again, nothing seen twice.
        assert consumed(exporter, SCORES, "processed") == total
        assert consumed(exporter, INCIDENTS, "processed") == failing
        for role, topics in ((scorer, (SESSIONS,)), (exporter, (SCORES, INCIDENTS))):
            for topic in topics:
                for outcome in ("duplicate", "dead_lettered", "handler_error"):
                    assert consumed(role, topic, outcome) == 0, (topic, outcome)
            assert role.metric("turnwatch_bus_dead_letter_total", reason="handler_error") == 0

        # The records themselves: one score per session revision, critical exactly when failing.
        scores = [orjson.loads(r.value) for r in read_topic(bootstrap, SCORES, total, 10)]
        identities = [(s["session_id"], s["revision"]) for s in scores]
        assert len(identities) == len(set(identities)) == total
        critical = {s["session_id"] for s in scores if s["critical_failures"]}
        assert len(critical) == failing
        incidents = [orjson.loads(r.value) for r in read_topic(bootstrap, INCIDENTS, failing, 10)]
        assert {i["score"]["session_id"] for i in incidents} == critical

        # Regression cases: exactly the failing conversations, by the chatbot's own trace ids.
        occurrences = _occurrences(cases_dir)
        keyed = Pseudonymizer(SECRET.encode(), DeidConfig().phone_regions).keyed_id
        traces.conversation_of = {keyed(t): c for t, c in traces.conversation_of.items()}
        flagged = {traces.conversation_of[t] for o in occurrences for t in o["trace_ids"]}
        assert flagged == FAILING
        assert {o["session_id"] for o in occurrences} == critical
        # ... and each case names the broken rule of its own conversations.
        expected = {"refund": "approval", "delete": "forbidden_action"}
        for case in _cases(cases_dir):
            checks = {f["check"] for f in case["findings"]["critical_failures"]}
            for item in case["occurrences"]:
                kinds = {traces.conversation_of[t].split("-")[0] for t in item["trace_ids"]}
                assert {expected[kind] for kind in kinds} <= checks
    finally:
        codes = [role.stop() for role in roles]
    assert codes == [0, 0, 0]
    logs = collector.process.stderr.read()
    assert "customer-3" not in logs and "healthy-3" not in logs


def _cases(directory: Path) -> list[dict]:
    return [json.loads(file.read_text()) for file in sorted(directory.glob("*.json"))]


def _occurrences(directory: Path) -> list[dict]:
    if not directory.exists():
        return []
    return [item for case in _cases(directory) for item in case["occurrences"]]
