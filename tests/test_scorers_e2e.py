"""End to end: real OTel SDK spans through a running turnwatch (with de-identification) and the
scorer on the sessions it hands off produce the expected findings, explained with tokens only."""

from __future__ import annotations

import asyncio

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from turnwatch.scorers.registry import ContractRegistry
from turnwatch.scorers.runner import bus_processor

from tests.conftest import make_settings, start_service
from tests.otel_chatbot import Exchange, provider_with, run_conversation
from tests.test_scorers_builders import SUPPORT_CONTRACT, support_scorer
from turnwatch.bus.records import INCIDENTS
from turnwatch.scores import ScoreRecord

pytestmark = pytest.mark.slow  # Presidio and the spaCy model (serve with de-identification)

BOB_EMAIL = "bob.stone@example.com"
ALICE_EMAIL = "alice.w@example.com"

BOB = [Exchange(user=f"Hello, my email is {BOB_EMAIL}.", answer="Thanks, noted.")]
ALICE = [
    Exchange(
        user=f"Hi, my email is {ALICE_EMAIL}. Please refund my broken kettle.",
        answer="Your refund is done.",
        tool="issue_refund",
        tool_arguments={"amount": 900},
        tool_fails=True,
    ),
    Exchange(user="Thanks.", answer="Before I go on, what is your email address?"),
    Exchange(user="Why?", answer=f"I also see {BOB_EMAIL} on file."),
]


def test_otel_spans_through_serve_produce_the_expected_findings(tmp_path):
    running = start_service(make_settings(data_dir=str(tmp_path)), deidentify=True)
    try:
        exporter = OTLPSpanExporter(endpoint=f"{running.http_url}/v1/traces")
        provider = provider_with(BatchSpanProcessor(exporter), service="support-bot")
        run_conversation(provider, "conv-bob", BOB, user_id="bob-1")
        provider.force_flush()
        [bob] = running.sink.wait_for(1, timeout=30)
        run_conversation(provider, "conv-alice", ALICE, user_id="alice-1")
        provider.shutdown()
        alice = running.sink.wait_for(2, timeout=30)[1]
    finally:
        running.background.stop()

    assert SUPPORT_CONTRACT.parent.name == "contracts"
    ContractRegistry.from_directory(SUPPORT_CONTRACT.parent)  # the shipped directory loads
    # Bob typed his e-mail in one session only: one sighting makes an owner here (by default
    # a value needs two sessions, or the user's own record, before it is anybody's).
    process = bus_processor(support_scorer(owner_min_sessions=1))
    asyncio.run(process(bob))
    published = asyncio.run(process(alice))
    assert [topic for topic, _, _ in published][-1] == INCIDENTS
    record = published[0].record
    assert isinstance(record, ScoreRecord)

    findings = {(f.check, f.turn_index) for r in record.results() for f in r.findings}
    refund_turn = next(t.index for t in alice.turns if t.tool_calls)
    assert ("forbidden_action", refund_turn) in findings
    assert ("approval", refund_turn) in findings
    assert ("tool_error_recovery", refund_turn + 1) in findings
    ask_turn = next(t.index for t in alice.turns if t.text and "email address?" in t.text)
    assert ("knowledge_attrition", ask_turn) in findings
    disclosed_turn = alice.turns[-1].index
    assert ("cross_user_disclosure", disclosed_turn) in findings
    assert {f.check for f in record.critical_failures} == {
        "forbidden_action",
        "approval",
        "cross_user_disclosure",
    }
    assert record.joint_success.value is False
    assert record.first_broken_transition.turn_index == refund_turn
    [disclosure] = [f for f in record.critical_failures if f.check == "cross_user_disclosure"]
    assert "<EMAIL_ADDRESS_" in disclosure.explanation and bob.user_id in disclosure.explanation
    serialised = record.model_dump_json()
    for raw in (BOB_EMAIL, ALICE_EMAIL, "bob-1", "alice-1", "kettle"):
        assert raw not in serialised
