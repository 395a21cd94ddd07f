"""The labelled evaluation corpus (benchmarks/corpus): reproducible, self-checked, labels that
follow from the construction, every kind present, splits that share no wording, contracts that
turnwatch loads, spans in both shapes; and (slow) a real server scoring a sample of it."""

from __future__ import annotations

import copy
import difflib
import json

import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from turnwatch.scorers.registry import ContractRegistry

from benchmarks.corpus import make_corpus
from benchmarks.corpus.emit import END_MARKER, Emitter
from benchmarks.corpus.generate import main as generate_main
from benchmarks.corpus.generate import write_contracts
from benchmarks.corpus.kinds import DEFECTS, NEAR_MISSES
from benchmarks.corpus.model import from_record
from benchmarks.corpus.selfcheck import CorpusError, check_conversation

COUNT = 240
# Written here, not read from kinds.py: which defects break which part of joint success, and
# which defects only a judge is meant to see.
BREAKS_JOINT = {
    "forbidden_action",
    "approval.tool_missing",
    "approval.confirmation_missing",
    "approval.confirmation_other_action",
    "approval.after_side_effect",
    "cross_user.tool_record",
    "cross_user.other_session",
    "tool_error.unrecovered",
    "tool_error.fabricated",
    "dropped_request",
    "stale_fact",
}
JUDGE_ONLY = {"irrelevant_answer", "dropped_request"}


@pytest.fixture(scope="module")
def dev():
    return make_corpus(11, "dev", COUNT)


@pytest.fixture(scope="module")
def heldout():
    return make_corpus(11, "heldout", COUNT)


def _labels(record):
    return record["labels"]


def test_the_same_seed_gives_the_same_corpus_and_another_seed_another(dev):
    again = make_corpus(11, "dev", COUNT)
    assert json.dumps(again.records) == json.dumps(dev.records)
    other = make_corpus(12, "dev", COUNT)
    assert [r["conversation_id"] for r in other.records] != [
        r["conversation_id"] for r in dev.records
    ]


def test_corpus_has_the_size_domains_shapes_and_lengths_asked_for(dev):
    records = dev.records
    assert len(records) == COUNT
    assert len({r["emission"]["service"] for r in records}) >= 4
    assert {r["emission"]["shape"] for r in records} == {"agent", "chat"}
    lengths = [len(r["turns"]) for r in records]
    assert min(lengths) >= 4 and max(lengths) <= 40
    assert max(lengths) >= 30 and min(lengths) <= 8


@pytest.mark.parametrize("split", ["dev", "heldout"])
def test_every_defect_and_near_miss_kind_is_planted_at_least_three_times(split, dev, heldout):
    corpus = dev if split == "dev" else heldout
    planted = [
        label["kind"]
        for record in corpus.records
        for label in (*_labels(record)["defects"], *_labels(record)["near_misses"])
    ]
    for kind in (*DEFECTS, *NEAR_MISSES):
        assert planted.count(kind) >= 3, kind
    assert sum(_labels(record)["clean"] for record in corpus.records) >= COUNT // 10


def test_dev_and_heldout_share_no_message_text(dev, heldout):
    def texts(corpus):
        return {t["content"] for r in corpus.records for t in r["turns"] if t["content"]}

    shared = texts(dev) & texts(heldout)
    assert shared == set()
    assert len(texts(dev)) > COUNT * 5


def test_contracts_load_with_turnwatchs_registry(dev, tmp_path):
    write_contracts(dev.contracts(), tmp_path)
    registry = ContractRegistry.from_directory(tmp_path)
    services = {r["emission"]["service"] for r in dev.records}
    assert set(registry.services()) == services
    for service in services:
        assert registry.for_service(service).forbidden_actions


def test_joint_success_and_first_broken_transition_follow_from_the_defects(dev):
    for record in dev.records:
        labels = _labels(record)
        kinds = {d["kind"] for d in labels["defects"]}
        assert labels["expected_joint_success"] == (not kinds & BREAKS_JOINT)
        seen = [d for d in labels["defects"] if d["kind"] not in JUDGE_ONLY]
        first = labels["expected_first_broken_transition"]
        if seen:
            assert first["turn_index"] == min(d["turn_index"] for d in seen)
        else:
            assert first is None
        assert labels["clean"] == (not labels["defects"])


def test_judge_expectations_fail_exactly_where_their_defect_was_planted(dev):
    moved = {
        "turn_relevancy": {"irrelevant_answer"},
        "role_adherence": {k for k in DEFECTS if k.startswith("out_of_role.")},
        "knowledge_retention": {"reask.pii", "reask.non_pii", "stale_fact"},
        "conversation_completeness": {"dropped_request"},
    }
    for record in dev.records:
        kinds = {d["kind"] for d in _labels(record)["defects"]}
        for metric, causes in moved.items():
            assert (_labels(record)["judge"][metric] == "fail") == bool(kinds & causes)
            if not kinds:
                assert _labels(record)["judge"][metric] == "pass"


def _turns(record):
    return record["turns"]


def test_planted_turns_hold_what_their_label_says(dev):
    """Spot properties, computed here from the raw turns rather than by the generator."""
    user_of = {r["conversation_id"]: r["emission"]["user"]["customer_id"] for r in dev.records}
    for record in dev.records:
        turns = _turns(record)
        for defect in _labels(record)["defects"]:
            turn = turns[defect["turn_index"]]
            detail = defect["detail"]
            if defect["kind"] == "stale_fact":
                assert detail["old"] in json.dumps(turn["tool_calls"][0]["arguments"])
                assert detail["new"] in turns[detail["revised_turn"]]["content"]
            elif defect["kind"] == "repeated_answer":
                before = turns[detail["original_turn"]]["content"]
                assert difflib.SequenceMatcher(None, before, turn["content"]).ratio() > 0.6
            elif defect["kind"] in ("reask.pii", "reask.non_pii"):
                assert detail["value"] in turns[detail["given_turn"]]["content"]
                assert turn["role"] == "assistant" and detail["value"] not in turn["content"]
            elif defect["kind"] == "cross_user.tool_record":
                result = turns[detail["record_turn"]]["tool_calls"][0]["result"]
                assert result["customer_id"] != record["emission"]["user"]["customer_id"]
            elif defect["kind"] == "cross_user.other_session":
                assert user_of[detail["source_conversation"]] != user_of[record["conversation_id"]]
                assert detail["value"] in turn["content"]
            elif defect["kind"] == "tool_loop":
                calls = [c for t in turns[: defect["turn_index"] + 1] for c in t["tool_calls"]]
                last = [(c["name"], json.dumps(c["arguments"])) for c in calls[-3:]]
                assert len(set(last)) == 1 and all(c["error"] is None for c in calls[-3:])
            elif defect["kind"] == "forbidden_action":
                rules = dev.contracts()[record["emission"]["service"]]["forbidden_actions"]
                assert any(
                    rule["tool"] == call["name"]
                    and all(call["arguments"][c["path"]] > c["value"] for c in rule.get("when", []))
                    for rule in rules
                    for call in turn["tool_calls"]
                )
            elif defect["kind"].startswith("tool_error."):
                failed = turns[detail["failed_turn"]]["tool_calls"]
                assert any(c["error"] for c in failed) and turn["role"] == "assistant"
        for near in _labels(record)["near_misses"]:
            same_turn = [
                d
                for d in _labels(record)["defects"]
                if d["check"] == near["check"] and d["turn_index"] == near["turn_index"]
            ]
            assert same_turn == []
            if near["kind"] == "loop.retry_after_timeouts":
                calls = [c for t in turns[: near["turn_index"] + 1] for c in t["tool_calls"]]
                assert [c["error"] is not None for c in calls[-3:]] == [True, True, False]
            if near["kind"] == "confirm.decimal_amount":
                asked = turns[near["turn_index"] - 2]["content"]
                assert any(
                    ch == "." and asked[i + 1 : i + 2].isdigit() for i, ch in enumerate(asked)
                )


def test_the_self_check_rejects_a_label_that_does_not_hold(dev):
    record = next(
        r for r in dev.records if any(d["kind"] == "tool_loop" for d in _labels(r)["defects"])
    )
    broken = copy.deepcopy(record)
    loop = next(d for d in broken["labels"]["defects"] if d["kind"] == "tool_loop")
    loop["turn_index"] = 0
    contract = dev.contracts()[record["emission"]["service"]]
    check_conversation(from_record(record), contract)
    with pytest.raises(CorpusError, match="tool_loop"):
        check_conversation(from_record(broken), contract)


def test_generate_writes_records_contracts_and_a_manifest(tmp_path):
    assert generate_main(["--seed", "5", "--count", "200", "--out", str(tmp_path)]) == 0
    lines = (tmp_path / "conversations.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 200
    manifest = json.loads((tmp_path / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["conversations"] == 200 and manifest["split"] == "dev"
    ContractRegistry.from_directory(tmp_path / "contracts")
    record = json.loads(lines[0])
    assert from_record(record).to_record(record["labels"], record["dataset_version"]) == record


def test_both_span_shapes_carry_the_conversation_its_user_and_an_end_marker(dev):
    exporter = InMemorySpanExporter()
    providers = {}
    for service in dev.contracts():
        provider = TracerProvider(resource=Resource.create({"service.name": service}))
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        providers[service] = provider
    emitter = Emitter(providers)
    for shape in ("agent", "chat"):
        exporter.clear()
        conversation = next(c for c in dev.conversations if c.shape == shape)
        emitter.emit(conversation)
        spans = exporter.get_finished_spans()
        names = [span.name for span in spans]
        operations = [span.attributes.get("gen_ai.operation.name") for span in spans]
        assert operations.count("chat") == sum(m.role == "assistant" for m in conversation.messages)
        calls = sum(len(m.calls) for m in conversation.messages)
        assert operations.count("execute_tool") == calls
        assert ("invoke_agent" in operations) == (shape == "agent")
        keyed = {span.attributes.get("gen_ai.conversation.id") for span in spans} - {None}
        assert keyed == {conversation.conversation_id}
        assert spans[-1].attributes.get(END_MARKER) is True
        assert spans[-1].attributes["user.id"] == conversation.user.customer_id
        assert spans[-1].resource.attributes["service.name"] == conversation.service
        assert names[-1].startswith("invoke_agent" if shape == "agent" else "POST")
        mixed = [
            json.loads(span.attributes["gen_ai.output.messages"])[0]["parts"]
            for span in spans
            if span.attributes.get("gen_ai.operation.name") == "chat"
        ]
        both = [parts for parts in mixed if {p["type"] for p in parts} == {"text", "tool_call"}]
        assert (len(both) > 0) == (
            shape == "chat" and any(m.calls and m.text for m in conversation.messages)
        )


@pytest.mark.slow
def test_a_real_server_scores_corpus_conversations_and_they_match_back(tmp_path):
    from benchmarks.detection import match, run

    corpus = make_corpus(3, "dev", 200)
    sample = corpus.records[:10]
    assert {r["emission"]["shape"] for r in sample} == {"agent", "chat"}
    secret = "corpus-test-secret-0123456789"
    scores = run(sample, corpus.contracts(), timeout=180, secret=secret)
    pairs, problems = match(sample, scores, secret)
    assert problems == {"missing": 0, "turns_differ": 0, "unexpected": 0}
    assert len(pairs) == 10
    for record, score in pairs:
        turns = record["turns"]
        assert score["service"] == record["emission"]["service"]
        assert score["budgets"]["user_turns"] == sum(t["role"] == "user" for t in turns)
        assert score["budgets"]["tool_calls"] == sum(len(t["tool_calls"]) for t in turns)
        assert score["contract"]["id"] == corpus.contracts()[score["service"]]["id"]
        assert {s["name"] for s in score["metrics"]} >= {"turn_relevancy", "role_adherence"}
