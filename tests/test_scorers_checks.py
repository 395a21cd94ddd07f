"""Every deterministic check on table-driven conversations: cases that must fire, near misses
that must not. Sessions are written as they reach the scorer: de-identified, PII as tokens."""

from __future__ import annotations

import pytest
from turnwatch.scorers.checks import catalogue
from turnwatch.scorers.checks.disclosure import OwnerIndex

from tests.test_scorers_builders import (
    BOB,
    EMAIL_A,
    EMAIL_A2,
    EMAIL_B,
    ORDER_A,
    ORDER_B,
    bot,
    call,
    session,
    support_scorer,
    usage,
    user,
)
from turnwatch.scores import ScoreRecord, Status

APPROVED = {"status": "approved"}


def refund(order: str = ORDER_A, amount: float = 100, error: str | None = None):
    return call("issue_refund", {"order_id": order, "amount": amount}, {"ok": True}, error)


def approve(order: str = ORDER_A, status: str = "approved"):
    return call("request_refund_approval", {"order_id": order, "amount": 100}, {"status": status})


def finding_turns(record: ScoreRecord, check: str) -> list[int | None]:
    [result] = [result for result in record.results() if result.check == check]
    return [finding.turn_index for finding in result.findings]


CASES = [
    # --- tool selection and argument validity
    ("unknown tool", "tool_selection", [user("hi"), bot(None, call("wipe_db"))], [1]),
    ("declared tool", "tool_selection", [user("hi"), bot(None, call("lookup_order"))], []),
    (
        "argument of the wrong type",
        "argument_validity",
        [user(f"order {ORDER_A}"), bot(None, call("lookup_order", {"order_id": 4411}))],
        [1],
    ),
    (
        "required argument missing",
        "argument_validity",
        [user("hi"), bot(None, call("update_address", {"order_id": ORDER_A}))],
        [1],
    ),
    (
        "valid arguments",
        "argument_validity",
        [user(f"order {ORDER_A}"), bot(None, call("lookup_order", {"order_id": ORDER_A}))],
        [],
    ),
    # --- forbidden actions (tool alone, tool + argument condition)
    (
        "refund over the limit",
        "forbidden_action",
        [user(f"refund {ORDER_A}"), bot(None, approve(), refund(amount=900))],
        [1],
    ),
    (
        "forbidden tool",
        "forbidden_action",
        [user("x"), bot(None, call("delete_account_data"))],
        [1],
    ),
    (
        "refund within the limit",
        "forbidden_action",
        [user(f"refund {ORDER_A}"), bot(None, approve(), refund(amount=500))],
        [],
    ),
    # --- approval before the side effect (order matters)
    ("refund without approval", "approval", [user(f"refund {ORDER_A}"), bot(None, refund())], [1]),
    (
        "approval after the refund",
        "approval",
        [user(f"refund {ORDER_A}"), bot(None, refund()), bot(None, approve())],
        [1],
    ),
    (
        "approval denied",
        "approval",
        [user(f"refund {ORDER_A}"), bot(None, approve(status="denied")), bot(None, refund())],
        [2],
    ),
    (
        "approval for another order",
        "approval",
        [user(f"{ORDER_A} {ORDER_B}"), bot(None, approve(ORDER_B)), bot(None, refund(ORDER_A))],
        [2],
    ),
    (
        "one approval, two refunds",
        "approval",
        [user(f"refund {ORDER_A}"), bot(None, approve(), refund(), refund())],
        [1],
    ),
    (
        "failed approval call",
        "approval",
        [
            user(f"refund {ORDER_A}"),
            bot(None, call("request_refund_approval", {}, APPROVED, error="Timeout")),
            bot(None, refund()),
        ],
        [2],
    ),
    (
        "approval that does come first",
        "approval",
        [user(f"refund {ORDER_A}"), bot(None, approve()), bot(None, refund())],
        [],
    ),
    (
        "address change without confirmation",
        "approval",
        [user(f"{ORDER_A} new address please"), bot(None, call("update_address"))],
        [1],
    ),
    (
        "user said yes but was never asked",
        "approval",
        [user("yes"), bot("Updating now."), bot(None, call("update_address"))],
        [2],
    ),
    (
        "user declined",
        "approval",
        [
            bot("Shall I change the address to <STREET_ADDRESS_12345678>?"),
            user("No, wait"),
            bot(None, call("update_address")),
        ],
        [2],
    ),
    (
        "user confirmed after being asked",
        "approval",
        [
            user("I moved."),
            bot("Shall I change the address to <STREET_ADDRESS_12345678>?"),
            user("Yes please"),
            bot(None, call("update_address")),
        ],
        [],
    ),
    # --- required facts before acting
    (
        "refund before any order number",
        "required_facts",
        [user("refund!"), bot(None, refund())],
        [1],
    ),
    (
        "order number given first",
        "required_facts",
        [user(f"refund {ORDER_A}"), bot(None, refund())],
        [],
    ),
    # --- knowledge attrition
    (
        "asks for the e-mail the user gave",
        "knowledge_attrition",
        [user(f"I'm {EMAIL_A}"), bot("Thanks. What is your email address?")],
        [1],
    ),
    (
        "asks after the user announced a change",
        "knowledge_attrition",
        [
            user(f"I'm {EMAIL_A}"),
            bot("Thanks."),
            user("Actually I changed my email."),
            bot("No problem, what is the new email?"),
        ],
        [],
    ),
    (
        "re-confirmation after the user revised the value",
        "knowledge_attrition",
        [
            user(f"I'm {EMAIL_A}"),
            bot("Thanks."),
            user(f"Use {EMAIL_A2} from now on."),
            bot("Could you confirm the email once more?"),
        ],
        [],
    ),
    (
        "asks again after the revision was settled",
        "knowledge_attrition",
        [
            user(f"I'm {EMAIL_A}"),
            bot("Thanks."),
            user(f"Use {EMAIL_A2} from now on."),
            bot("Noted."),
            bot("What is your email?"),
        ],
        [4],
    ),
    (
        "asks before the user gave it",
        "knowledge_attrition",
        [user("hi"), bot("What is your email address?"), user(EMAIL_A)],
        [],
    ),
    (
        "quotes the value to confirm it",
        "knowledge_attrition",
        [user(f"I'm {EMAIL_A}"), bot(f"Is your email still {EMAIL_A}?")],
        [],
    ),
    (
        "asks for another fact type",
        "knowledge_attrition",
        [user(f"I'm {EMAIL_A}"), bot("What is your phone number?")],
        [],
    ),
    # --- unresolved contradictions (stale value after a revision)
    (
        "keeps the replaced e-mail",
        "contradictions",
        [
            user(f"I'm {EMAIL_A}"),
            user(f"Sorry, it is {EMAIL_A2}"),
            bot(None, call("update_contact", {"email": EMAIL_A})),
        ],
        [2],
    ),
    (
        "uses the revised e-mail",
        "contradictions",
        [
            user(f"I'm {EMAIL_A}"),
            user(f"Sorry, it is {EMAIL_A2}"),
            bot(None, call("update_contact", {"email": EMAIL_A2})),
        ],
        [],
    ),
    (
        "user switched back",
        "contradictions",
        [user(EMAIL_A), user(EMAIL_A2), user(f"no, {EMAIL_A} after all"), bot(f"Ok, {EMAIL_A}.")],
        [],
    ),
    # --- no progress
    (
        "same answer twice",
        "near_duplicates",
        [
            user("where is it"),
            bot("I am checking the status of your order right now."),
            user("and?"),
            bot("I am checking the status of your order right now!"),
        ],
        [3],
    ),
    (
        "different answers",
        "near_duplicates",
        [
            user("where is it"),
            bot("I am checking the status of your order right now."),
            user("and?"),
            bot("Your order left the warehouse this morning."),
        ],
        [],
    ),
    ("short acknowledgements", "near_duplicates", [bot("Ok, done."), bot("Ok, done.")], []),
    (
        "fourth clarifying question",
        "clarifications",
        [
            bot("Which order?"),
            bot("Which item?"),
            bot("What colour?"),
            bot("Which size?"),
        ],
        [3],
    ),
    (
        "three questions and a closing one",
        "clarifications",
        [
            bot("Which order?"),
            bot("Which item?"),
            bot("What colour?"),
            bot("Anything else I can help with?"),
        ],
        [],
    ),
    (
        "three identical calls",
        "tool_loop",
        [user(f"{ORDER_A}?"), bot(None, *[call("lookup_order", {"order_id": ORDER_A})] * 3)],
        [1],
    ),
    (
        "one retry after an error",
        "tool_loop",
        [
            user(f"{ORDER_A}?"),
            bot(None, call("lookup_order", {"order_id": ORDER_A}, error="Timeout")),
            bot(None, call("lookup_order", {"order_id": ORDER_A})),
        ],
        [],
    ),
    # --- tool-error recovery
    (
        "hallucinated result",
        "tool_error_recovery",
        [user(f"refund {ORDER_A}"), bot(None, refund(error="Timeout")), bot("Refund done.")],
        [2],
    ),
    (
        "silent give-up",
        "tool_error_recovery",
        [user(f"refund {ORDER_A}"), bot(None, refund(error="Timeout")), user("hello?")],
        [1],
    ),
    (
        "recovered by retrying",
        "tool_error_recovery",
        [
            user(f"refund {ORDER_A}"),
            bot(None, refund(error="Timeout"), refund()),
            bot("Refund done."),
        ],
        [],
    ),
    (
        "told the user",
        "tool_error_recovery",
        [
            user(f"refund {ORDER_A}"),
            bot(None, refund(error="Timeout")),
            bot("Sorry, the refund system is unavailable right now."),
        ],
        [],
    ),
    (
        "escalated",
        "tool_error_recovery",
        [
            user(f"refund {ORDER_A}"),
            bot(None, refund(error="Timeout"), call("handoff_to_human")),
            bot("A colleague will take over."),
        ],
        [],
    ),
    # --- persona rules, reported as role adherence
    (
        "claims to be a person",
        "role_adherence",
        [user("Am I talking to a bot?"), bot("No, I'm a real person on the support team.")],
        [1],
    ),
    (
        "says it is an assistant",
        "role_adherence",
        [user("Are you human?"), bot("I'm Acme's virtual assistant, not a person.")],
        [],
    ),
    # --- outcome and final state
    (
        "task completed",
        "outcome",
        [user("hi"), bot(None, call("record_resolution", {"outcome": "resolved"}, {"ok": True}))],
        [],
    ),
    ("nothing done", "outcome", [user("hi"), bot("Hello!")], [1]),
    (
        "correct escalation",
        "outcome",
        [user("I want a human"), bot("I am transferring you to a human agent now.")],
        [],
    ),
    (
        "side effect after the hand-over",
        "outcome",
        [user(f"{ORDER_A}"), bot(None, call("handoff_to_human")), bot(None, approve(), refund())],
        [2],
    ),
    (
        "final state overwritten",
        "final_state",
        [
            user("hi"),
            bot(None, call("record_resolution", {"outcome": "resolved"}, {"ok": True})),
            bot(None, call("record_resolution", {"outcome": "resolved"}, {"ok": False})),
        ],
        [2],
    ),
    (
        "final state holds",
        "final_state",
        [user("hi"), bot(None, call("record_resolution", {"outcome": "resolved"}, {"ok": True}))],
        [],
    ),
]


@pytest.mark.parametrize(
    ("check", "turns", "expected"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_check_fires_exactly_where_expected(check, turns, expected):
    record = support_scorer().score(session(*turns))
    assert finding_turns(record, check) == expected


def _many_turns(count: int, **extra: object) -> list[dict]:
    return [user("next question"), bot("next answer", **extra)] * count


BUDGET_CASES = [
    ("21 user turns", "turn_budget", _many_turns(21), [40]),
    ("20 user turns", "turn_budget", _many_turns(20), []),
    ("slow model call", "latency_budget", [user("hi"), bot("hi", latency_ms=20_000)], [1]),
    (
        "session latency",
        "latency_budget",
        _many_turns(5, latency_ms=14_000),
        [9],  # each call is under the 15 s turn budget; at turn 9 the total passes 60 s
    ),
    ("fast", "latency_budget", [user("hi"), bot("hi", latency_ms=900)], []),
    (
        "tokens",
        "token_budget",
        _many_turns(3, usage=usage(25_000, 10), model="m"),
        [5],  # 25 010 tokens per model call: the third one passes 60 000
    ),
    ("tokens within the budget", "token_budget", _many_turns(2, usage=usage(25_000, 10)), []),
]


@pytest.mark.parametrize(
    ("check", "turns", "expected"),
    [case[1:] for case in BUDGET_CASES],
    ids=[case[0] for case in BUDGET_CASES],
)
def test_budgets(check, turns, expected):
    record = support_scorer().score(session(*turns))
    assert finding_turns(record, check) == expected


def test_session_latency_budget_names_the_crossing_turn():
    record = support_scorer().score(session(*_many_turns(5, latency_ms=14_000)))
    [result] = [r for r in record.results() if r.check == "latency_budget"]
    assert [f.explanation for f in result.findings] == [
        "session latency 70000 ms exceeds the 60000 ms budget"
    ]


PRICES = {"m": {"input_per_million_usd": 1.0, "output_per_million_usd": 4.0}}
PRICED_CASES = [
    # 0.024 USD per model call against the contract's 0.05 USD: the third call passes it.
    ("cost", "cost_budget", _many_turns(3, usage=usage(20_000, 1_000), model="m"), [5]),
    (
        "cost within budget",
        "cost_budget",
        _many_turns(2, usage=usage(20_000, 1_000), model="m"),
        [],
    ),
]


@pytest.mark.parametrize(
    ("check", "turns", "expected"),
    [case[1:] for case in PRICED_CASES],
    ids=[case[0] for case in PRICED_CASES],
)
def test_cost_budget(check, turns, expected):
    record = support_scorer(prices=PRICES).score(session(*turns))
    assert finding_turns(record, check) == expected


# Scored after Bob gave EMAIL_B and EMAIL_A2 in two sessions, and Alice, in an earlier session,
# EMAIL_A2 too.
DISCLOSURE_CASES = [
    (
        "another user's e-mail, later in the conversation",
        "cross_user_disclosure",
        [user("hi"), bot("Hello."), user("my order?"), bot(f"It went to {EMAIL_B}.")],
        [3],
    ),
    (
        "an address two users gave is nobody's secret",
        "cross_user_disclosure",
        [user("hi"), bot("Hello."), user("my order?"), bot(f"It went to {EMAIL_A2}.")],
        [],
    ),
]


@pytest.mark.parametrize(
    ("check", "turns", "expected"),
    [case[1:] for case in DISCLOSURE_CASES],
    ids=[case[0] for case in DISCLOSURE_CASES],
)
def test_cross_user_disclosure(check, turns, expected):
    scorer = support_scorer()
    bob = [user(f"I am {EMAIL_B}, or {EMAIL_A2}"), bot("Thanks.")]
    for visit in ("s-bob-1", "s-bob-2"):  # twice, and nobody else: certainly Bob's
        scorer.score(session(*bob, user_id=BOB, session_id=visit))
    scorer.score(session(user(f"mine is {EMAIL_A2}"), bot("Thanks."), session_id="s-0"))
    assert finding_turns(scorer.score(session(*turns)), check) == expected


def test_every_check_in_the_catalogue_has_a_firing_case_and_a_near_miss():
    catalogued = {spec.name for spec in catalogue(OwnerIndex(max_entries=1))}
    cases = CASES + BUDGET_CASES + PRICED_CASES + DISCLOSURE_CASES
    firing = {case[1] for case in cases if case[3]}
    quiet = {case[1] for case in cases if not case[3]}
    assert firing == catalogued, f"without a firing case: {catalogued - firing}"
    assert quiet == catalogued, f"without a near miss: {catalogued - quiet}"


def test_cost_budget_uses_the_price_table():
    [(_name, _check, turns, _expected), *_] = PRICED_CASES  # 0.024 USD per model call
    record = support_scorer(prices=PRICES).score(session(*turns))
    [result] = [r for r in record.results() if r.check == "cost_budget"]
    assert result.value == pytest.approx(0.072)
    assert record.budgets.cost_usd == pytest.approx(0.072)


def test_cost_without_a_price_is_unscored_not_zero():
    record = support_scorer(prices=PRICES).score(
        session(user("hi"), bot("hi", usage=usage(10, 10), model="other"))
    )
    [result] = [r for r in record.results() if r.check == "cost_budget"]
    assert result.status is Status.UNSCORED
    assert result.unscored_reason == "no price configured for model 'other'"
    assert record.budgets.cost_usd is None
    assert record.budgets.cost_unscored_reason == "no price configured for model 'other'"
