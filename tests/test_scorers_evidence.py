"""Structured evidence on findings: every check fills the de-identified facts it knows (tool call
ids, tool and contract names, tokens and their owners, turn indexes, numbers), never text."""

from __future__ import annotations

import pytest

from tests.test_scorers_builders import (
    ALICE,
    BOB,
    EMAIL_A,
    EMAIL_A2,
    EMAIL_B,
    ORDER_A,
    bot,
    call,
    session,
    support_scorer,
    usage,
    user,
)
from tests.test_scorers_checks import _many_turns
from turnwatch.scores import Evidence, Finding, ScoreRecord


def called(name: str, call_id: str, arguments: object = None, **extra: object):
    return call(name, arguments, **extra).model_copy(update={"id": call_id})


def refund(call_id: str, amount: float = 100, error: str | None = None):
    arguments = {"order_id": ORDER_A, "amount": amount}
    return called("issue_refund", call_id, arguments, result={"ok": True}, error=error)


def findings(record: ScoreRecord, check: str) -> list[Finding]:
    return [f for result in record.results() if result.check == check for f in result.findings]


CASES = [
    (
        "forbidden_action",
        [user(f"refund {ORDER_A}"), bot(None, refund("call_9", amount=900))],
        {"tool_call_id": "call_9", "tool_name": "issue_refund", "rule": "refund_over_limit"},
    ),
    (
        "approval",
        [user(f"refund {ORDER_A}"), bot(None, refund("call_1"))],
        {
            "tool_call_id": "call_1",
            "tool_name": "issue_refund",
            "rule": "tools.issue_refund.approval",
        },
    ),
    (
        "required_facts",
        [user("refund!"), bot(None, refund("call_2"))],
        {"tool_call_id": "call_2", "tool_name": "issue_refund", "rule": "order_id"},
    ),
    (
        "tool_selection",
        [user("hi"), bot(None, called("wipe_db", "call_3"))],
        {"tool_call_id": "call_3", "tool_name": "wipe_db", "rule": "tools"},
    ),
    (
        "argument_validity",
        [user("hi"), bot(None, called("lookup_order", "call_4", {"order_id": 4411}))],
        {
            "tool_call_id": "call_4",
            "tool_name": "lookup_order",
            "rule": "tools.lookup_order.arguments",
            "argument_path": "$['order_id']",
            "schema_keyword": "type",
        },
    ),
    (
        "knowledge_attrition",
        [user(f"I'm {EMAIL_A}"), bot("Thanks."), bot("What is your email address?")],
        {"entity": "EMAIL_ADDRESS", "related_turn_index": 0},
    ),
    (
        "contradictions",
        [
            user(f"I'm {EMAIL_A}"),
            user(f"Sorry, it is {EMAIL_A2}"),
            bot(None, called("update_contact", "call_5", {"email": EMAIL_A})),
        ],
        {
            "token": EMAIL_A,
            "entity": "EMAIL_ADDRESS",
            "replaced_by": EMAIL_A2,
            "related_turn_index": 1,
            "tool_call_id": "call_5",
            "tool_name": "update_contact",
        },
    ),
    (
        "tool_error_recovery",
        [user(f"refund {ORDER_A}"), bot(None, refund("call_6", error="Timeout")), bot("Done.")],
        {
            "tool_call_id": "call_6",
            "tool_name": "issue_refund",
            "related_turn_index": 1,
            "rule": "recovery.unacknowledged",
        },
    ),
    (
        "near_duplicates",
        [
            user("where is it"),
            bot("I am checking the status of your order right now."),
            user("and?"),
            bot("I am checking the status of your order right now!"),
        ],
        {"related_turn_index": 1, "measured": 1.0, "limit": 0.8},
    ),
    (
        "clarifications",
        [bot("Which order?"), bot("Which item?"), bot("What colour?"), bot("Which size?")],
        {"rule": "max_clarifications", "measured": 4, "limit": 3},
    ),
    (
        "tool_loop",
        [user(f"{ORDER_A}?"), bot(None, *[called("lookup_order", f"call_7{n}") for n in "abc"])],
        {"tool_call_id": "call_7c", "tool_name": "lookup_order", "measured": 3, "limit": 3},
    ),
    (
        "outcome",
        [user("hi"), bot("Hello!")],
        {"rule": "success"},
    ),
    (
        "final_state",
        [user("hi"), bot(None, called("record_resolution", "call_8", result={"ok": False}))],
        {"tool_call_id": "call_8", "tool_name": "record_resolution", "rule": "success"},
    ),
    (
        "turn_budget",
        _many_turns(21),
        {"rule": "budgets.max_user_turns", "measured": 21, "limit": 20},
    ),
    (
        "latency_budget",
        [user("hi"), bot("hi", latency_ms=20_000)],
        {"rule": "budgets.max_turn_latency_ms", "measured": 20_000, "limit": 15_000},
    ),
    (
        "token_budget",
        _many_turns(3, usage=usage(25_000, 10), model="m"),
        {"rule": "budgets.max_tokens", "measured": 75_030, "limit": 60_000},
    ),
]


@pytest.mark.parametrize(("check", "turns", "expected"), CASES, ids=[case[0] for case in CASES])
def test_each_check_fills_the_evidence_it_knows(check, turns, expected):
    [finding] = findings(support_scorer().score(session(*turns)), check)
    assert finding.evidence.model_dump() == expected


def test_a_disclosure_names_the_token_and_its_owner_without_parsing_the_explanation():
    scorer = support_scorer()
    for visit in ("b1", "b2"):  # Bob's, certainly: nobody else ever supplied it
        scorer.score(session(user(f"I am {EMAIL_B}"), bot("Noted."), user_id=BOB, session_id=visit))
    record = scorer.score(
        session(user("hi"), bot(None, called("lookup_order", "call_x", {"q": EMAIL_B})))
    )
    [finding] = findings(record, "cross_user_disclosure")
    assert finding.evidence.model_dump() == {
        "token": EMAIL_B,
        "entity": "EMAIL_ADDRESS",
        "owner": BOB,
        "tool_call_id": "call_x",
        "tool_name": "lookup_order",
    }
    assert ALICE not in finding.evidence.model_dump_json()  # the disclosing session's own user


def test_unset_evidence_is_left_out_and_old_records_without_it_still_validate():
    record = support_scorer().score(session(user("hi"), bot("Hello!")))
    dumped = record.model_dump(mode="json")
    [outcome] = [r for r in dumped["session_level"] if r["check"] == "outcome"]
    assert outcome["findings"][0]["evidence"] == {"rule": "success"}
    for level in ("turn_level", "trajectory_level", "session_level"):
        for result in dumped[level]:
            for finding in result["findings"]:
                del finding["evidence"]
    for finding in dumped["critical_failures"]:
        del finding["evidence"]
    old = ScoreRecord.model_validate(dumped)  # as written before evidence existed
    read = [finding for result in old.results() for finding in result.findings]
    assert read and all(finding.evidence == Evidence() for finding in read)
