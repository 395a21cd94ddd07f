"""Flagged sessions become regression cases: flagging rules, the case format and its JSON Schema,
grouping by failure signature, idempotency, retention, the exporter-role handler, and one run
through a real turnwatch with de-identification and real OTel SDK spans."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import jsonschema
import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from prometheus_client import CollectorRegistry
from turnwatch.exporters.regressions.config import RegressionConfig
from turnwatch.exporters.regressions.handler import IncidentHandler
from turnwatch.exporters.regressions.metrics import RegressionMetrics
from turnwatch.exporters.regressions.schema import SCHEMA_PATH, CaseInvalid, validate_case
from turnwatch.exporters.regressions.store import CaseStore, regressions_dir
from turnwatch.scorers.flagging import Flagger
from turnwatch.scorers.registry import ContractRegistry, load_contract
from turnwatch.scorers.runner import bus_processor

from tests.conftest import make_settings, start_service
from tests.otel_chatbot import Exchange, provider_with, run_conversation
from tests.test_scorers_builders import (
    ALICE,
    BOB,
    ORDER_A,
    SUPPORT_CONTRACT,
    bot,
    call,
    session,
    support_scorer,
    user,
)
from turnwatch.bus.base import RecordProcessor
from turnwatch.bus.config import BusConfig
from turnwatch.bus.embedded import EmbeddedBus
from turnwatch.bus.metrics import BusMetrics
from turnwatch.bus.records import INCIDENTS, SCORES, encode
from turnwatch.incidents import Incident
from turnwatch.revisions import SeenRevisions
from turnwatch.schema import SamplingDecision, SamplingReason
from turnwatch.scores import Score

CONTRACTS = ContractRegistry([load_contract(SUPPORT_CONTRACT)])


def refund_over_limit(session_id: str = "s-1", user_id: str = ALICE, revision: int = 1):
    """A refund above the limit without approval: forbidden action + approval, both critical."""
    built = session(
        user(f"Please refund order {ORDER_A}, it arrived broken."),
        bot(None, call("issue_refund", {"order_id": ORDER_A, "amount": 900}, {"status": "paid"})),
        bot("Your refund of 900 is done."),
        session_id=session_id,
        user_id=user_id,
    )
    built.revision = revision
    built.trace_ids = ["4bf92f3577b34da6a3ce929d0e0e4736"]
    built.provenance.models = ["gpt-4o-mini"]
    built.provenance.service_version = "1.4.2"
    built.system_instructions = ["You are a helpful support agent for Acme."]
    return built


def resolved(session_id: str = "s-ok"):
    return session(
        user(f"Where is order {ORDER_A}?"),
        bot(None, call("lookup_order", {"order_id": ORDER_A}, {"status": "packed"})),
        bot(None, call("record_resolution", {"outcome": "resolved"}, {"ok": True})),
        bot("It ships tomorrow."),
        session_id=session_id,
    )


def case_files(data_dir: Path) -> list[Path]:
    """What the store wrote, its lock file (shared by replicas) aside."""
    return sorted(p for p in regressions_dir(data_dir).iterdir() if p.name != ".lock")


def store_at(tmp_path, **config: object) -> tuple[CaseStore, CollectorRegistry]:
    registry = CollectorRegistry()
    store = CaseStore(
        regressions_dir(tmp_path),
        RegressionConfig.model_validate(config),
        RegressionMetrics(registry),
        CONTRACTS.for_service,
    )
    return store, registry


def incident(flagger: Flagger, built) -> Incident:
    record = support_scorer().score(built)
    return Incident.of(built, record, flagger(built, record))


def counted(registry: CollectorRegistry, outcome: str) -> float:
    value = registry.get_sample_value("turnwatch_regression_incidents_total", {"outcome": outcome})
    return value or 0.0


def test_the_shipped_schema_is_valid_draft_2020_12():
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)


def test_flagging_rules():
    flag = Flagger(RegressionConfig(metric_thresholds={"turn_relevancy": 0.7}))
    scorer = support_scorer()
    assert flag(resolved(), scorer.score(resolved())) == []

    bad = refund_over_limit()
    assert flag(bad, scorer.score(bad)) == ["critical_failure", "joint_failure"]

    ok = resolved()
    record = scorer.score(ok)
    record.metrics = [
        Score(name="turn_relevancy", value=0.4),
        Score(name="turn_relevancy", value=None, unscored_reason="judge budget spent"),
    ]
    ok.sampling = SamplingDecision(
        sampled=True, reason=SamplingReason.FORCED_ATTRIBUTE, rate=0.1, hash_fraction=0.9
    )
    assert flag(ok, record) == ["metric_below:turn_relevancy", "sampling:forced_attribute"]

    drift = Flagger(RegressionConfig(on_forced_sample=False), drift_outlier=lambda r: True)
    assert drift(ok, record) == ["drift_outlier"]
    assert Flagger(RegressionConfig(enabled=False))(bad, scorer.score(bad)) == []


def test_a_flagged_session_becomes_a_case_in_the_dataset_schema(tmp_path):
    store, registry = store_at(tmp_path, dataset_version="support-mt-4")
    assert store.record(incident(Flagger(RegressionConfig()), refund_over_limit())) == "new_case"

    [file] = case_files(tmp_path)
    case = json.loads(file.read_text(encoding="utf-8"))
    validate_case(case)
    assert file.name == f"{case['case_id']}.json"
    assert oct(file.stat().st_mode & 0o777) == "0o600"
    # The seed document's fields, filled from the session and the contract.
    assert case["conversation_id"] == case["case_id"]
    assert case["dataset_version"] == "support-mt-4"
    assert "forbidden_action" in case["scenario"]
    assert case["required_facts"] == ["order_id"]
    assert case["forbidden_actions"] == ["refund_over_limit", "delete_account"]
    assert case["success"]["any_of"][0]["tool"] == "record_resolution"
    assert case["critical_failures"] == ["forbidden_action", "approval", "cross_user_disclosure"]
    assert case["rubric_version"] == "acme-support@4"
    first, refund, answer = case["turns"]
    assert (first["turn_id"], first["role"], first["facts_revealed"]) == (1, "user", ["order_id"])
    assert refund["tool_calls"][0]["result"] == {"status": "paid"}
    assert answer["content"] == "Your refund of 900 is done."
    # Provenance and findings.
    provenance = case["provenance"]
    assert provenance["models"] == ["gpt-4o-mini"]
    assert provenance["service_version"] == "1.4.2"
    assert provenance["policy"] == {"contract_id": "acme-support", "contract_version": "4"}
    assert provenance["trace_ids"] == ["4bf92f3577b34da6a3ce929d0e0e4736"]
    assert provenance["tool_attempts"][0]["name"] == "issue_refund"
    assert len(provenance["prompt_sha256"]) == 64
    findings = case["findings"]
    assert findings["reasons"] == ["critical_failure", "joint_failure"]
    assert findings["first_broken_transition"] == {"turn_id": 2, "check": "forbidden_action"}
    assert {f["check"] for f in findings["critical_failures"]} == {"forbidden_action", "approval"}
    assert findings["joint_success"]["value"] is False
    assert case["signature"] == {
        "service": "support-bot",
        "check": "approval+forbidden_action",
        "transition": "forbidden_action@tool:issue_refund",
    }
    assert counted(registry, "new_case") == 1
    assert registry.get_sample_value("turnwatch_regression_cases") == 1

    case["turns"][0]["role"] = "narrator"
    try:
        validate_case(case)
    except CaseInvalid as exc:
        assert str(exc) == "turns/0/role: fails enum"
    else:
        raise AssertionError("an unknown role must not validate")


def test_recurrences_collapse_into_one_case_with_a_count(tmp_path):
    store, registry = store_at(tmp_path)
    flag = Flagger(RegressionConfig())
    assert store.record(incident(flag, refund_over_limit("s-1"))) == "new_case"
    # At-least-once delivery: the same revision again is a no-op.
    assert store.record(incident(flag, refund_over_limit("s-1"))) == "duplicate"
    # The same failure in another conversation (at another turn index) is an occurrence.
    later = refund_over_limit("s-2", user_id=BOB)
    later.turns.insert(0, later.turns[0].model_copy(update={"text": "Hello."}))
    for index, turn in enumerate(later.turns):
        turn.index = index
    assert store.record(incident(flag, later)) == "recurrence"
    # A later revision of a listed session updates it without counting it again.
    assert store.record(incident(flag, refund_over_limit("s-1", revision=2))) == "new_revision"

    [case] = list(store.cases())
    assert case.occurrence_count == 2
    assert [(o.session_id, o.revision) for o in case.occurrences] == [("s-2", 1), ("s-1", 2)]
    assert case.provenance.revision == 2  # the exemplar follows its latest revision
    assert len(case_files(tmp_path)) == 1
    assert counted(registry, "duplicate") == 1

    # A restarted exporter rebuilds its view from the files: the redelivery stays a no-op.
    reopened, _ = store_at(tmp_path)
    assert reopened.record(incident(flag, refund_over_limit("s-2", user_id=BOB))) == "duplicate"


def test_retention_evicts_the_least_recently_seen_case_and_counts_it(tmp_path):
    store, registry = store_at(tmp_path, max_cases=2, max_occurrences=1)
    flag = Flagger(RegressionConfig())
    deleting = session(user("delete me"), bot(None, call("delete_account_data")), session_id="d")
    unknown = session(user("hi"), bot(None, call("launch_rocket")), session_id="u")
    assert store.record(incident(flag, refund_over_limit("r"))) == "new_case"
    assert store.record(incident(flag, deleting)) == "new_case"
    # Seeing the refund case again makes the deletion case the least recently seen.
    assert store.record(incident(flag, refund_over_limit("r2"))) == "recurrence"
    assert store.record(incident(flag, unknown)) == "new_case"
    checks = sorted(s.check for s in store.summaries())
    assert checks == ["approval+forbidden_action", "tool_selection"]
    assert registry.get_sample_value("turnwatch_regression_cases_evicted_total") == 1
    [refund] = [c for c in store.cases() if c.signature.check != "tool_selection"]
    assert refund.occurrence_count == 2 and len(refund.occurrences) == 1


def test_non_deidentified_sessions_never_become_case_files(tmp_path):
    store, registry = store_at(tmp_path)
    raw = refund_over_limit()
    raw.deidentified = False
    assert store.record(incident(Flagger(RegressionConfig()), raw)) == "not_deidentified"
    assert not regressions_dir(tmp_path).exists()
    assert counted(registry, "not_deidentified") == 1


async def test_bus_incident_to_case_file_and_invalid_incidents_to_the_dead_letter_topic(
    tmp_path,
):
    store, registry = store_at(tmp_path)
    handler = IncidentHandler(store)
    process = bus_processor(support_scorer(), flag=Flagger(RegressionConfig()))
    assert [o.topic for o in await process(resolved())] == [SCORES]
    published = await process(refund_over_limit())
    assert [o.topic for o in published] == [SCORES, INCIDENTS]
    bus = EmbeddedBus(BusConfig(), BusMetrics(CollectorRegistry()), None)
    processor = RecordProcessor(bus, handler, 1 << 20, SeenRevisions(10))
    wire = encode(published[1].record, 1 << 20)
    assert await processor.handle(INCIDENTS, "s-1", wire, 0, 0) == "processed"
    assert await processor.handle(INCIDENTS, "s-1", wire, 0, 1) == "duplicate"  # redelivered
    assert await handler(SCORES, published[0].record) == ()  # scores are not incidents
    assert [counted(registry, o) for o in ("new_case", "duplicate")] == [1, 0]

    # What the handler never sees: an incident that does not validate is dead-lettered.
    incident_json = json.loads(wire)
    broken = [
        {**incident_json, "session": {"turns": "nope"}},
        {**incident_json, "reasons": []},
        {**incident_json, "revision": 2},  # not the revision of the session it carries
        incident_json["score"],  # a bare score record is not an incident
    ]
    for offset, record in enumerate(broken, start=2):
        value = json.dumps(record).encode()
        assert await processor.handle(INCIDENTS, "s-1", value, 0, offset) == "dead_lettered"
    letters = [letter for _, letter in bus.dead_letters]
    assert [(d.reason, d.source_topic, d.offset) for d in letters] == [
        ("invalid", INCIDENTS, offset) for offset in range(2, 6)
    ]
    assert bus.metrics.dead_lettered.labels("invalid")._value.get() == 4
    assert [counted(registry, o) for o in ("new_case", "duplicate")] == [1, 0]


BOB_EMAIL = "bob.stone@example.com"
ALICE_EMAIL = "alice.w@example.com"
RAW = (BOB_EMAIL, ALICE_EMAIL, "bob-1", "alice-1", "conv-alice", "conv-bob", "Alice Walker")


@pytest.mark.slow  # Presidio and the spaCy model
def test_otel_spans_through_serve_become_pii_free_cases(tmp_path):
    bob_talk = [Exchange(user=f"Hello, my email is {BOB_EMAIL}.", answer="Thanks, noted.")]
    alice_talk = [
        Exchange(
            user=f"Hi, I am Alice Walker, my email is {ALICE_EMAIL}. Refund my broken kettle.",
            answer="Your refund is done.",
            tool="issue_refund",
            tool_arguments={"amount": 900, "contact": ALICE_EMAIL},
            tool_result={"status": "paid"},
        ),
        Exchange(user="Why?", answer=f"I also see {BOB_EMAIL} on file."),
    ]
    running = start_service(make_settings(data_dir=str(tmp_path)), deidentify=True)
    try:
        exporter = OTLPSpanExporter(endpoint=f"{running.http_url}/v1/traces")
        provider = provider_with(BatchSpanProcessor(exporter), service="support-bot")
        run_conversation(provider, "conv-bob", bob_talk, user_id="bob-1")
        provider.force_flush()
        running.sink.wait_for(1, timeout=30)
        run_conversation(provider, "conv-alice", alice_talk, user_id="alice-1")
        provider.shutdown()
        sessions = running.sink.wait_for(2, timeout=30)
    finally:
        running.background.stop()

    store, registry = store_at(tmp_path)
    handler = IncidentHandler(store)
    # One sighting makes Bob the owner of his e-mail (the default waits for two sessions).
    process = bus_processor(support_scorer(owner_min_sessions=1), flag=Flagger(RegressionConfig()))

    async def run() -> None:
        for captured in sessions:
            for output in await process(captured):
                await handler(output.topic, output.record)

    asyncio.run(run())
    files = sorted(regressions_dir(tmp_path).glob("*.json"))
    # Bob's session failed joint success (no resolution), Alice's leaked Bob's address.
    assert len(files) == 2 and counted(registry, "new_case") == 2
    cases = [json.loads(file.read_text(encoding="utf-8")) for file in files]
    for case in cases:
        validate_case(case)
    [case] = [c for c in cases if "cross_user_disclosure" in c["signature"]["check"]]
    owners = case["initial_state"]["known_token_owners"]
    [(token, owner)] = owners.items()
    assert token.startswith("<EMAIL_ADDRESS_") and owner == sessions[0].user_id
    assert case["provenance"]["trace_ids"] and case["provenance"]["tool_attempts"]
    assert "<EMAIL_ADDRESS_" in json.dumps(case)
    for file in files:
        text = file.read_text(encoding="utf-8")
        for raw in RAW:
            assert raw not in text, raw
