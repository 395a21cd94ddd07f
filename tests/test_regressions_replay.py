"""Replay and export: cases replayed against a loopback OpenAI-compatible chatbot that answers
well (the case passes) or badly (it fails, non-zero exit), through the CLI and through the
generated pytest module; JSON Lines and DeepEval exports load."""

from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any, ClassVar, Literal

import pytest
from pydantic import BaseModel, ConfigDict
from turnwatch.exporters.regressions.config import RegressionConfig
from turnwatch.exporters.regressions.schema import validate_case
from turnwatch.scorers.flagging import Flagger

from tests.support_bot import Bot, serve_handler
from tests.test_regressions_cases import incident, refund_over_limit, store_at
from tests.test_scorers_builders import ORDER_A, SUPPORT_CONTRACT, bot, call, session, user
from turnwatch.app.regressions import add_regressions_parser, run_regressions

ROOT = Path(__file__).resolve().parent.parent


class ScriptedChatbot(BaseHTTPRequestHandler):
    """`POST /v1/chat/completions`: a good bot hands a large refund to a human; a bad one pays."""

    behaviour: str = "good"
    requests: ClassVar[list[dict[str, Any]]] = []  # each test's subclass gets its own

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append({"path": self.path, "body": body})
        last = body["messages"][-1]
        if last["role"] == "tool":
            message = {"role": "assistant", "content": self._after_tool()}
        elif self.behaviour == "good":
            message = self._call("handoff_to_human", {"reason": "refund above limit"})
        else:
            message = self._call("issue_refund", {"order_id": ORDER_A, "amount": 900})
        answer = json.dumps({"choices": [{"index": 0, "message": message}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def _after_tool(self) -> str:
        if self.behaviour == "good":
            return "A colleague will take over your refund request."
        return "Your refund of 900 is done."

    @staticmethod
    def _call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        function = {"name": name, "arguments": json.dumps(arguments)}
        return {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "call_1", "type": "function", "function": function}],
        }

    def log_message(self, *args: object) -> None:
        pass


def chatbot(behaviour: Literal["good", "bad"]) -> Iterator[Bot]:
    handler = type("Bot", (ScriptedChatbot,), {"behaviour": behaviour, "requests": []})
    with serve_handler(handler) as (bot, _):
        yield bot


@pytest.fixture
def good_bot() -> Iterator[Bot]:
    yield from chatbot("good")


@pytest.fixture
def bad_bot() -> Iterator[Bot]:
    yield from chatbot("bad")


@pytest.fixture
def data_dir(tmp_path) -> Path:
    store, _ = store_at(tmp_path)
    flag = Flagger(RegressionConfig())
    for session_id in ("s-1", "s-2"):  # one case seen twice
        store.record(incident(flag, refund_over_limit(session_id)))
    (tmp_path / "turnwatch.yaml").write_text(
        f"scorers:\n  contracts_dir: {SUPPORT_CONTRACT.parent}\n", encoding="utf-8"
    )
    return tmp_path


def cli(data_dir: Path, *argv: str) -> tuple[int, str, str]:
    parser = argparse.ArgumentParser(prog="turnwatch")
    add_regressions_parser(parser.add_subparsers(dest="command"))
    config = str(data_dir / "turnwatch.yaml")
    args = parser.parse_args(
        ["regressions", "--config", config, "--data-dir", str(data_dir), *argv]
    )
    out, err = io.StringIO(), io.StringIO()
    return run_regressions(args, out, err), out.getvalue(), err.getvalue()


def test_replay_passes_against_a_fixed_chatbot(data_dir, good_bot):
    code, out, err = cli(data_dir, "replay", "--target", good_bot.url)
    assert code == 0, out
    assert out.startswith("PASS rc-")
    assert "- fixed: approval" in out and "- fixed: forbidden_action" in out
    assert "? unrecorded tools: handoff_to_human" in out
    assert "1 passed, 0 failed" in out
    assert "replay [" in err and "1/1" in err


def test_replay_fails_with_a_findings_diff_when_the_failure_recurs(data_dir, bad_bot):
    code, out, _ = cli(data_dir, "replay", "--target", bad_bot.url, "--model", "candidate-2")
    assert code == 1
    assert out.startswith("FAIL rc-")
    assert "= still failing: forbidden_action" in out
    assert "! critical: approval" in out
    assert "0 passed, 1 failed" in out


def test_replay_sends_the_recorded_conversation_and_replays_recorded_tool_results(
    data_dir, bad_bot
):
    cli(data_dir, "replay", "--target", bad_bot.url, "--model", "candidate-2")
    first, second = bad_bot.requests
    assert first["path"] == "/v1/chat/completions"
    assert first["body"]["model"] == "candidate-2"
    assert [m["role"] for m in first["body"]["messages"]] == ["system", "user"]
    assert ORDER_A in first["body"]["messages"][1]["content"]
    names = {tool["function"]["name"] for tool in first["body"]["tools"]}
    assert {"issue_refund", "handoff_to_human"} <= names
    tool_reply = second["body"]["messages"][-1]
    assert tool_reply["role"] == "tool" and json.loads(tool_reply["content"]) == {"status": "paid"}


def test_replay_against_an_unreachable_target_fails(data_dir):
    code, out, _ = cli(data_dir, "replay", "--target", "http://127.0.0.1:9/v1")
    assert code == 1 and "cannot reach the target" in out


def test_list_show_and_jsonl_export(data_dir):
    code, out, _ = cli(data_dir, "list")
    assert code == 0 and "approval+forbidden_action" in out and "1 of 1 case(s)" in out
    case_id = out.splitlines()[1].split()[0]
    assert cli(data_dir, "list", "--service", "nobody")[1].endswith("0 of 0 case(s)\n")
    assert cli(data_dir, "list", "--since", "2999-01-01")[1].endswith("0 of 0 case(s)\n")
    code, out, _ = cli(data_dir, "show", case_id)
    assert code == 0 and json.loads(out)["occurrence_count"] == 2
    assert cli(data_dir, "show", "rc-0000000000000000")[0] == 2
    code, out, _ = cli(data_dir, "export", "--format", "jsonl")
    [line] = out.splitlines()
    validate_case(json.loads(line))


def test_show_prints_every_finding_with_its_evidence(tmp_path):
    other, name = "<ACCOUNT_ID_c0ffee00>", "<PERSON_c0ffee01>"
    record = {"order_id": ORDER_A, "customer_id": other, "customer_name": name}
    leaked = session(
        user(f"Where is {ORDER_A}?"),
        bot(None, call("lookup_order", {"order_id": ORDER_A}, record)),
        bot(f"It is {name}'s order."),
        session_id="s-leak",
    )
    store, _ = store_at(tmp_path)
    store.record(incident(Flagger(RegressionConfig()), leaked))
    (tmp_path / "turnwatch.yaml").write_text("{}\n", encoding="utf-8")
    [summary] = store.summaries()
    code, out, _ = cli(tmp_path, "show", summary.id)
    assert code == 0
    [finding] = json.loads(out)["findings"]["critical_failures"]
    assert finding["check"] == "cross_user_disclosure"
    # The record's owner, the call that read it and the rule, as fields: nothing is parsed.
    assert finding["evidence"] == {
        "related_turn_index": 1,
        "tool_name": "lookup_order",
        "rule": "ownership.owner_fields",
        "token": name,
        "entity": "PERSON",
        "owner": other,
    }


class DeepEvalToolCall(BaseModel):
    """DeepEval's documented ToolCall fields (deepeval.test_case.ToolCall)."""

    model_config = ConfigDict(extra="forbid")
    name: str
    description: str | None = None
    reasoning: str | None = None
    input_parameters: dict[str, Any] | None = None
    output: Any = None


class DeepEvalTurn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    role: Literal["user", "assistant"]
    content: str
    user_id: str | None = None
    retrieval_context: list[str] | None = None
    tools_called: list[DeepEvalToolCall] | None = None
    additional_metadata: dict[str, Any] | None = None


class DeepEvalConversationalTestCase(BaseModel):
    """The documented fields of deepeval.test_case.ConversationalTestCase."""

    model_config = ConfigDict(extra="forbid")
    turns: list[DeepEvalTurn]
    scenario: str | None = None
    context: list[str] | None = None
    name: str | None = None
    user_description: str | None = None
    expected_outcome: str | None = None
    chatbot_role: str | None = None
    additional_metadata: dict[str, Any] | None = None
    comments: str | None = None
    tags: list[str] | None = None


def test_deepeval_export_matches_conversational_test_case(data_dir, tmp_path):
    target = tmp_path / "cases.deepeval.json"
    assert cli(data_dir, "export", "--format", "deepeval", "--output", str(target))[0] == 0
    [item] = json.loads(target.read_text(encoding="utf-8"))
    case = DeepEvalConversationalTestCase.model_validate(item)
    assert [turn.role for turn in case.turns] == ["user", "assistant"]
    [tool] = case.turns[1].tools_called
    assert (tool.name, tool.output) == ("issue_refund", {"status": "paid"})
    assert case.chatbot_role and case.scenario and "record_resolution" in case.expected_outcome
    assert case.context == ["You are a helpful support agent for Acme."]


@pytest.mark.slow  # a pytest subprocess
def test_generated_pytest_module_replays_and_asserts(data_dir, tmp_path, good_bot, bad_bot):
    module = tmp_path / "test_exported_regressions.py"
    assert cli(data_dir, "export", "--format", "pytest", "--output", str(module))[0] == 0
    env = {
        **os.environ,
        "TURNWATCH_CONFIG": str(data_dir / "turnwatch.yaml"),
        "PYTHONPATH": str(ROOT),
    }

    def run(target: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(module)],
            cwd=tmp_path,
            env={**env, "TURNWATCH_REPLAY_TARGET": target},
            capture_output=True,
            text=True,
            timeout=120,
        )

    passed = run(good_bot.url)
    assert passed.returncode == 0, passed.stdout
    failed = run(bad_bot.url)
    assert failed.returncode == 1, failed.stdout
    assert "still failing: forbidden_action" in failed.stdout
