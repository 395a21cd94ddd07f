"""Contract loading: the shipped contract loads; a bad one fails with file, line and field."""

from __future__ import annotations

import textwrap

import pytest
from turnwatch.scorers.conditions import Condition
from turnwatch.scorers.registry import ContractError, ContractRegistry, load_contract

from tests.test_scorers_builders import SUPPORT_CONTRACT

HEAD = "service: bot\nversion: '1'\nchatbot_role: helper\n"


def test_the_shipped_support_contract_loads():
    contract = load_contract(SUPPORT_CONTRACT)
    assert contract.service == "support-bot"
    assert contract.tools["issue_refund"].approval.tools[0].match_arguments == ["order_id"]
    assert contract.escalation_tools() == {"handoff_to_human"}
    assert contract.critical == ["forbidden_action", "approval", "cross_user_disclosure"]


ERRORS = [
    (
        "unknown field",
        HEAD + "tools:\n  lookup:\n    argumnts: {type: object}\n",
        "bot.yaml:6: tools.lookup.argumnts: Extra inputs are not permitted",
    ),
    (
        "invalid JSON Schema",
        HEAD + "tools:\n  lookup:\n    arguments:\n      type: objekt\n",
        "bot.yaml:7: tools.lookup.arguments: Value error, invalid JSON Schema at type:",
    ),
    (
        "bad condition",
        HEAD
        + textwrap.dedent(
            """\
            tools:
              refund: {}
            forbidden_actions:
              - id: big
                tool: refund
                when:
                  - {path: amount, op: gt, value: lots}
            """
        ),
        "bot.yaml:10: forbidden_actions.0.when.0: Value error, op gt needs a number value",
    ),
    (
        "missing field points at its parent",
        "service: bot\nchatbot_role: helper\n",
        "bot.yaml:1: version: Field required",
    ),
    (
        "undeclared tool",
        HEAD + "success:\n  any_of:\n    - tool: close_ticket\n",
        "bot.yaml:1: (contract): Value error, tools referenced but not declared under tools: "
        "['close_ticket']",
    ),
    (
        "approval on a tool without side effects",
        HEAD + "tools:\n  refund:\n    approval: {user_confirmation: true}\n",
        "bot.yaml:6: tools.refund: Value error, approval is only meaningful on a side_effect tool",
    ),
    (
        "unknown critical check",
        HEAD + "critical: [forbidden_action, vibes]\n",
        "bot.yaml:4: critical.1: Input should be",
    ),
    ("invalid YAML", HEAD + "tools: [unclosed\n", "bot.yaml:5: invalid YAML:"),
    ("not a mapping", "- just a list\n", "bot.yaml:1: a contract is a mapping of fields"),
]


@pytest.mark.parametrize(
    ("text", "message"), [case[1:] for case in ERRORS], ids=[case[0] for case in ERRORS]
)
def test_bad_contract_names_file_line_and_field(tmp_path, text, message):
    path = tmp_path / "bot.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ContractError) as raised:
        load_contract(path)
    assert str(raised.value).startswith(f"{tmp_path}/{message}"), str(raised.value)


def test_directory_reports_every_broken_file_and_duplicate_services(tmp_path):
    (tmp_path / "a.yaml").write_text(HEAD, encoding="utf-8")
    (tmp_path / "b.yml").write_text(HEAD, encoding="utf-8")
    (tmp_path / "c.yaml").write_text("service: c\n", encoding="utf-8")
    with pytest.raises(ContractError) as raised:
        ContractRegistry.from_directory(tmp_path)
    lines = str(raised.value).splitlines()
    assert f"{tmp_path}/c.yaml:1: version: Field required" in lines
    assert (
        f"{tmp_path}/b.yml:1: service: 'bot' already has a contract in {tmp_path}/a.yaml" in lines
    )


@pytest.mark.parametrize(
    ("condition", "document", "holds"),
    [
        ({"path": "amount", "op": "gt", "value": 500}, {"amount": 900}, True),
        ({"path": "amount", "op": "gt", "value": 500}, {"amount": "900"}, False),
        ({"path": "amount", "op": "gt", "value": 500}, {}, False),
        ({"path": "items.1.sku", "value": "b"}, {"items": [{"sku": "a"}, {"sku": "b"}]}, True),
        ({"path": "status", "op": "in", "value": ["ok", "done"]}, {"status": "done"}, True),
        ({"path": "note", "op": "exists"}, {"note": None}, True),
        ({"path": "note", "op": "matches", "value": "^<EMAIL"}, {"note": "<EMAIL_X_1>"}, True),
        ({"path": "flag", "op": "ne", "value": True}, {"flag": True}, False),
    ],
)
def test_conditions(condition, document, holds):
    assert Condition.model_validate(condition).holds(document) is holds
