"""Export formats: JSON Lines, DeepEval `ConversationalTestCase` JSON, a generated pytest module.

DeepEval's multi-turn test case has `turns` (role `user` or `assistant`, `content`, optional
`tools_called` of `name`/`input_parameters`/`output`), `scenario`, `expected_outcome`,
`user_description`, `chatbot_role`, `context`, `name`, `additional_metadata`, `comments` and
`tags`. DeepEval has no tool role: tool calls go on the assistant turn that made them, and an
assistant turn that only called tools is folded into the next assistant answer.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from turnwatch.exporters.regressions.model import Case
from turnwatch.scorers.contract_sections import SuccessEvidence

from turnwatch.schema import Role

FORMATS = ("jsonl", "deepeval", "pytest")


def to_jsonl(cases: Iterable[Case]) -> str:
    return "".join(json.dumps(case.to_json(), ensure_ascii=False) + "\n" for case in cases)


def _expected_outcome(case: Case) -> str:
    parts = []
    success = case.success.get("any_of") or []
    if success:
        evidence = " or ".join(SuccessEvidence.model_validate(item).describe() for item in success)
        parts.append(f"the task completed, shown by {evidence}")
    else:
        parts.append("the user's task completes or is handed to a human")
    if case.forbidden_actions:
        parts.append(f"without the forbidden actions {', '.join(case.forbidden_actions)}")
    if case.critical_failures:
        parts.append(f"and without any of {', '.join(case.critical_failures)}")
    return "The conversation ends with " + " ".join(parts) + "."


def to_deepeval(case: Case) -> dict[str, Any]:
    turns: list[dict[str, Any]] = []
    pending: list[dict[str, Any]] = []
    for turn in case.turns:
        if turn.role is Role.USER:
            if pending:
                turns.append(_tool_only_turn(pending))
                pending = []
            turns.append({"role": "user", "content": turn.content or ""})
        elif turn.role is Role.ASSISTANT:
            pending += [
                {
                    "name": call.name,
                    "input_parameters": call.arguments
                    if isinstance(call.arguments, dict)
                    else {"value": call.arguments},
                    "output": call.error if call.error else call.result,
                }
                for call in turn.tool_calls or []
            ]
            if turn.content:
                out: dict[str, Any] = {"role": "assistant", "content": turn.content}
                if pending:
                    out["tools_called"], pending = pending, []
                turns.append(out)
    if pending:
        turns.append(_tool_only_turn(pending))
    findings = case.findings
    broken = findings.first_broken_transition
    return {
        "name": case.case_id,
        "scenario": case.scenario,
        "expected_outcome": _expected_outcome(case),
        "user_description": f"A pseudonymous production user of {case.signature.service}.",
        "chatbot_role": case.chatbot_role,
        "context": case.initial_state.system_instructions or None,
        "turns": turns,
        "tags": case.slice,
        "comments": f"turnwatch regression, seen {case.occurrence_count} time(s)",
        "additional_metadata": {
            "case_id": case.case_id,
            "dataset_version": case.dataset_version,
            "rubric_version": case.rubric_version,
            "signature": case.signature.model_dump(mode="json"),
            "first_broken_transition": broken.model_dump(mode="json") if broken else None,
            "failed_checks": [item.check for item in findings.failed_checks],
            "critical_failures": [item.check for item in findings.critical_failures],
        },
    }


def _tool_only_turn(calls: list[dict[str, Any]]) -> dict[str, Any]:
    names = ", ".join(call["name"] for call in calls)
    return {"role": "assistant", "content": f"[called {names}]", "tools_called": calls}


def to_deepeval_json(cases: Iterable[Case]) -> str:
    # DeepEval requires at least one turn; a case without any has nothing to evaluate.
    converted = [to_deepeval(case) for case in cases]
    return json.dumps([item for item in converted if item["turns"]], indent=2) + "\n"


PYTEST_TEMPLATE = '''"""Regression cases exported by `turnwatch regressions export --format pytest`.

Each case replays its recorded user turns against the chatbot at TURNWATCH_REPLAY_TARGET (an
OpenAI-compatible endpoint), answers tool calls from the recorded trace, scores the transcript
with turnwatch's scorers and the configured contracts (TURNWATCH_CONFIG or TURNWATCH_*
variables), and fails when the recorded failure recurs. Cases hold de-identified content only.
"""

import json

import pytest

from turnwatch.app.regressions import replay_from_environment

CASES = json.loads({cases!r})


@pytest.mark.parametrize("case", CASES, ids=[case["case_id"] for case in CASES])
def test_regression_case(case):
    result = replay_from_environment(case)
    assert result.passed, result.report()
'''


def to_pytest(cases: Iterable[Case]) -> str:
    data = [case.to_json() for case in cases]
    return PYTEST_TEMPLATE.format(cases=json.dumps(data, ensure_ascii=False))
