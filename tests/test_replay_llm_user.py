"""The optional simulated user played by a model (`--user llm`), against a model on loopback that
speaks the OpenAI chat-completions protocol: its prompt, model, seed and version are stored with
every result; a model that volunteers a fact breaks the rules and the failure is the simulator's;
an answer that is not the asked-for JSON falls back to the scripted user, marked unsure."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from typing import Any, ClassVar

import pytest
from turnwatch.exporters.regressions.chat import ChatClient
from turnwatch.exporters.regressions.profile import profile_of
from turnwatch.exporters.regressions.replay import Scoring, replay_all
from turnwatch.exporters.regressions.results import RunOutcome, load_replay
from turnwatch.exporters.regressions.scenario import Scenario
from turnwatch.exporters.regressions.simulator_llm import LlmUser, llm_info

from tests.support_bot import CONTRACT, Bot, address_case, serve, serve_handler
from tests.test_gate import replay
from tests.test_scorers_builders import support_scorer
from turnwatch.tokens import TOKEN


class SimulatorModel(BaseHTTPRequestHandler):
    """A model playing the user: it reads its private state from the system prompt."""

    behaviour: ClassVar[str] = "good"
    requests: ClassVar[list[dict[str, Any]]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append(body)
        system, *conversation = body["messages"]
        known = {match.group(1): match.group(0) for match in TOKEN.finditer(system["content"])}
        asked = conversation[-1]["content"].lower() if conversation else ""
        content = json.dumps(self.answer(asked, known))
        if self.behaviour == "garbage":
            content = "Sure! I would say my order number."
        message = {"role": "assistant", "content": content}
        data = json.dumps(
            {"choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def answer(self, asked: str, known: dict[str, str]) -> dict[str, Any]:
        if self.behaviour == "volunteer":
            return {"message": f"Order {known['ORDER_NUMBER']}, to {known['STREET_ADDRESS']}."}
        if "order number" in asked:
            return {"message": f"It's {known['ORDER_NUMBER']}."}
        if "address" in asked and "?" in asked and "shall i" not in asked:
            return {"message": f"It's {known['STREET_ADDRESS']}."}
        if "shall i" in asked:
            return {"message": "Yes, go ahead."}
        return {"message": None, "stop": "success"}

    def log_message(self, *args: object) -> None:
        pass


@contextmanager
def simulator(behaviour: str) -> Iterator[Bot]:
    handler = type("Model", (SimulatorModel,), {"behaviour": behaviour, "requests": []})
    with serve_handler(handler) as (bot, _):
        yield bot


def llm_run(behaviour: str, number: int):
    scenario = Scenario.of_case(address_case(number))
    with serve("v1") as target, simulator(behaviour) as model:
        client, scoring = ChatClient(target.url), Scoring(support_scorer())
        model_client = ChatClient(model.url)

        def make_user(scenario, contract, repeat):
            return LlmUser(profile_of(scenario, contract), contract, model_client, "sim-1", 3)

        try:
            [run] = replay_all([scenario], client, scoring, make_user)
        finally:
            client.close()
            scoring.close()
            model_client.close()
    return run, model.requests


def test_a_well_behaved_model_user_passes_and_its_settings_are_recorded(tmp_path, monkeypatch):
    with simulator("good") as model:
        path = replay(
            tmp_path,
            "v1",
            [address_case(40)],
            repeat=2,
            extra=(
                *("--user", "llm", "--simulator-url", model.url),
                *("--simulator-model", "sim-1", "--simulator-seed", "7"),
            ),
        )
    result = load_replay(path)
    info = result.simulator
    assert (info.kind, info.model, info.seed, info.temperature) == ("llm", "sim-1", 7, 0.0)
    assert info.prompt_version == llm_info("sim-1", 7, 0.0).prompt_version
    assert "Give a fact marked" in info.prompt
    assert [(run.outcome, run.seed) for run in result.runs] == [
        (RunOutcome.PASSED, 7),
        (RunOutcome.PASSED, 8),
    ]
    first = model.requests[0]
    assert (first["model"], first["seed"], first["temperature"]) == ("sim-1", 7, 0.0)
    assert first["response_format"] == {"type": "json_object"}
    # The private state went to the model in the prompt; the roles are swapped.
    assert "(when asked)" in first["messages"][0]["content"]
    assert first["messages"][1]["role"] == "assistant"  # the user's own first turn


def test_a_model_that_volunteers_facts_is_noted_as_a_violation():
    run, _ = llm_run("volunteer", 41)
    violations = [note for note in run.simulator_notes if note.kind == "violation"]
    assert violations and "volunteered" in violations[0].reason
    # v1 asks for the address, gets an order number too, and the conversation fails: the
    # failure follows a broken rule, so it is the simulator's, not the chatbot's.
    assert not run.joint_success and run.outcome is RunOutcome.SIMULATOR


def test_an_answer_that_is_not_json_falls_back_to_the_scripted_user():
    run, requests = llm_run("garbage", 42)
    assert requests
    unsure = [note for note in run.simulator_notes if note.kind == "unsure"]
    assert unsure and "not the asked-for JSON" in unsure[0].reason
    # The scripted fallback answered from private state: the conversation still succeeded.
    assert run.outcome is RunOutcome.PASSED


def test_llm_user_needs_an_endpoint(tmp_path, capsys):
    with pytest.raises(AssertionError):
        replay(tmp_path, "v1", [address_case(43)], extra=("--user", "llm"))
    assert "--user llm needs --simulator-url" in capsys.readouterr().err


def test_the_prompt_carries_the_profile():
    profile = profile_of(Scenario.of_case(address_case(44)), CONTRACT)
    user = LlmUser(profile, CONTRACT, ChatClient("http://127.0.0.1:9"), "m")
    assert profile.goal in user.system and "update_address" in user.system
    assert "- order_id: <ORDER_NUMBER_" in user.system
