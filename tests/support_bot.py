"""A scripted support chatbot on loopback (OpenAI-compatible chat completions, with tools), in
several versions, and the regression cases recorded from its production predecessor.

Three kinds of conversation, each under the support-bot contract:

- address change: the bot collects the new address and the order number, asks to confirm, then
  calls update_address and record_resolution. v1 asks for the address first; v2 (a harmless
  rewording) asks for the order number first, in other words, and takes only the fact it asked
  for, so the recorded user turns answer the wrong questions;
- refund: the order number comes with the request; approval, refund, resolution. v2 rewords
  the last answer;
- order status with a failing tool (slice tool-failure): the recorded lookup_order failed once,
  then answered. v1 retries; v2 (the planted regression) answers as if the lookup had worked.

`flaky` is v1 that, on every second status conversation, makes v2's mistake: pass^k material.
The bot is stateless: it reads everything from the messages of each request, like a real one.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, HTTPServer, ThreadingHTTPServer
from typing import Any, ClassVar, NamedTuple

from turnwatch.exporters.regressions.case import build_case
from turnwatch.exporters.regressions.model import Case
from turnwatch.exporters.regressions.signature import Signature
from turnwatch.scorers.phrases import confirmation_requests, is_consent, says_no
from turnwatch.scorers.registry import load_contract

from tests.test_scorers_builders import (
    NOW,
    SUPPORT_CONTRACT,
    bot,
    call,
    session,
    support_scorer,
    user,
)
from turnwatch.tokens import TOKEN

CONTRACT = load_contract(SUPPORT_CONTRACT)
VERSIONS = ("v1", "v2", "flaky")
MODEL = "support-model"
APPROVED = {"status": "approved"}


def order(number: int) -> str:
    return f"<ORDER_NUMBER_{number:08x}>"


def address(number: int) -> str:
    return f"<STREET_ADDRESS_{number:08x}>"


def user_of(number: int) -> str:
    return f"<USER_ID_{number:08x}>"


class Plan(NamedTuple):
    text: str | None = None
    tool: str | None = None
    arguments: dict[str, Any] | None = None


class State:
    """What the conversation so far says (read from the request's messages)."""

    def __init__(self, messages: list[dict[str, Any]], strict: bool) -> None:
        self.facts: dict[str, str] = {}
        self.results: dict[str, list[Any]] = {}
        self.confirmed = self.declined = False
        self.goal = self.last_user = ""
        names: dict[str, str] = {}
        last_ask = ""
        for message in messages:
            role, content = message["role"], message.get("content") or ""
            if role == "assistant":
                last_ask = content
                for item in message.get("tool_calls") or []:
                    names[item["id"]] = item["function"]["name"]
            elif role == "user":
                self._user(content, last_ask, strict)
            elif role == "tool":
                name = names.get(message.get("tool_call_id"), "unknown")
                self.results.setdefault(name, []).append(json.loads(content))
        self.last_role = messages[-1]["role"]

    def _user(self, content: str, last_ask: str, strict: bool) -> None:
        self.last_user = content
        if not self.goal:
            self.goal = content
        if confirmation_requests(last_ask):
            self.confirmed = self.confirmed or is_consent(content)
            self.declined = self.declined or says_no(content)
        for match in TOKEN.finditer(content):
            entity = match.group(1)
            wanted = {"ORDER_NUMBER": "order number", "STREET_ADDRESS": "address"}.get(entity)
            if strict and content is not self.goal and wanted and wanted not in last_ask:
                continue  # v2 takes only the fact it asked for
            self.facts[entity] = match.group(0)


def plan(state: State, version: str, flaky_turn: bool) -> Plan:
    if state.last_role == "user" and state.last_user.lower().startswith("thanks"):
        return Plan("You're welcome, goodbye!")
    goal = state.goal.lower()
    if "address" in goal:
        return _address(state, version)
    if "refund" in goal:
        return _refund(state, version)
    return _status(state, version == "v2" or (version == "flaky" and flaky_turn))


def _address(state: State, version: str) -> Plan:
    o, a = state.facts.get("ORDER_NUMBER"), state.facts.get("STREET_ADDRESS")
    if state.declined:
        return Plan("Okay, I have not changed anything.")
    if version == "v2":
        if o is None:
            return Plan("Could you give me the order number first, please?")
        if a is None:
            return Plan("Thanks. What is the new delivery address?")
        confirm = f"Just to confirm: should I update the delivery address of order {o} to {a}?"
        done = f"All set, order {o} now goes to {a}."
    else:
        if a is None:
            return Plan("Sure. What is the new delivery address?")
        if o is None:
            return Plan("Thanks. And what is the order number?")
        confirm = f"Shall I change the delivery address of order {o} to {a}?"
        done = "Done, the address is updated."
    if not state.confirmed:
        return Plan(confirm)
    if "update_address" not in state.results:
        return Plan(tool="update_address", arguments={"order_id": o, "address": a})
    if "record_resolution" not in state.results:
        return Plan(tool="record_resolution", arguments={"outcome": "address_changed"})
    return Plan(done)


def _refund(state: State, version: str) -> Plan:
    o = state.facts.get("ORDER_NUMBER")
    if o is None:
        return Plan("What is the order number?")
    if "request_refund_approval" not in state.results:
        return Plan(tool="request_refund_approval", arguments={"order_id": o, "amount": 40})
    if "issue_refund" not in state.results:
        return Plan(tool="issue_refund", arguments={"order_id": o, "amount": 40})
    if "record_resolution" not in state.results:
        return Plan(tool="record_resolution", arguments={"outcome": "refunded"})
    if version == "v2":
        return Plan("The refund of 40 has been issued to your card.")
    return Plan("Your refund of 40 is on its way.")


def _status(state: State, regressed: bool) -> Plan:
    o = state.facts.get("ORDER_NUMBER")
    if o is None:
        return Plan("What is the order number?")
    lookups = state.results.get("lookup_order", [])
    if not lookups:
        return Plan(tool="lookup_order", arguments={"order_id": o})
    last = lookups[-1]
    if isinstance(last, dict) and "error" in last:
        if regressed:
            return Plan("Your order is on its way!")
        if len(lookups) < 3:
            return Plan(tool="lookup_order", arguments={"order_id": o})
        return Plan("Sorry, I cannot reach the order system right now.")
    if "record_resolution" not in state.results:
        return Plan(tool="record_resolution", arguments={"outcome": "resolved"})
    return Plan(f"Your order has {last.get('status', 'moved')}.")


class SupportBot(BaseHTTPRequestHandler):
    version: ClassVar[str] = "v1"
    requests: ClassVar[list[dict[str, Any]]] = []
    conversations: ClassVar[itertools.count] = itertools.count()
    lock: ClassVar[threading.Lock] = threading.Lock()

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        cls = type(self)
        messages = body["messages"]
        with cls.lock:
            cls.requests.append(body)
            users = [m for m in messages if m["role"] == "user"]
            first_call = len(users) == 1 and messages[-1]["role"] == "user"
            number = next(cls.conversations) if first_call else None
        flaky = self.server.flaky  # type: ignore[attr-defined]
        if number is not None:
            flaky[users[0]["content"]] = number % 2 == 1
        flaky_turn = flaky.get(users[0]["content"], False)
        step = plan(State(messages, strict=cls.version == "v2"), cls.version, flaky_turn)
        if step.tool is not None:
            function = {"name": step.tool, "arguments": json.dumps(step.arguments)}
            call_id = f"call_{len(messages)}"
            message = {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": call_id, "type": "function", "function": function}],
            }
        else:
            message = {"role": "assistant", "content": step.text}
        answer = {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "model": MODEL,
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 40 * len(messages), "completion_tokens": 12},
        }
        data = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


class Bot(NamedTuple):
    url: str
    requests: list[dict[str, Any]]


@contextmanager
def serve(version: str) -> Iterator[Bot]:
    assert version in VERSIONS
    handler = type(
        f"SupportBot_{version}",
        (SupportBot,),
        {"version": version, "requests": [], "conversations": itertools.count()},
    )
    with serve_handler(handler) as (bot, server):
        server.flaky = {}  # type: ignore[attr-defined]  # first user message -> flaky conversation
        yield bot


@contextmanager
def serve_handler(handler: type[BaseHTTPRequestHandler]) -> Iterator[tuple[Bot, HTTPServer]]:
    """A chatbot request handler on a loopback port, as its base URL and the server."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    # A short poll interval: shutdown() waits for the loop to look (0.5 s by default).
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield Bot(f"http://127.0.0.1:{server.server_address[1]}/v1", handler.requests), server
    finally:
        server.shutdown()
        server.server_close()


def _case(built, reason: str, kind: str, number: int) -> Case:
    built.provenance.models = [MODEL]
    built.provenance.service_version = "0.9"
    built.system_instructions = ["You are the Acme support assistant."]
    built.ended_at = NOW + timedelta(minutes=2)
    record = support_scorer().score(built)
    sig = Signature("support-bot", kind, f"{kind}#{number}")
    return build_case(built, record, [reason], sig, "support-regressions-1", CONTRACT, NOW)


def address_case(number: int) -> Case:
    """Recorded on v0, which asked for the order number twice (knowledge attrition)."""
    o, a = order(number), address(number)
    built = session(
        user("Hi, I moved and my order needs a new delivery address."),
        bot("Sure. What is the new delivery address?"),
        user(f"It's {a}."),
        bot("Thanks. And what is the order number?"),
        user(f"The order number is {o}."),
        bot("Sorry, could you tell me the order number again?"),
        user(f"It's {o}."),
        bot(f"Shall I change the delivery address of order {o} to {a}?"),
        user("Yes, go ahead."),
        bot(None, call("update_address", {"order_id": o, "address": a}, {"ok": True})),
        bot(None, call("record_resolution", {"outcome": "address_changed"}, {"ok": True})),
        bot("Done, the address is updated."),
        user("Thanks, bye."),
        session_id=f"prod-address-{number}",
        user_id=user_of(number),
    )
    return _case(built, "sampling:forced_attribute", "address", number)


def refund_case(number: int) -> Case:
    """Recorded on v0, whose last answer took 20 s (over the contract's turn latency budget)."""
    o = order(number)
    built = session(
        user(f"I want a refund for order {o}, it arrived broken."),
        bot(
            None,
            call("request_refund_approval", {"order_id": o, "amount": 40}, {"status": "approved"}),
        ),
        bot(None, call("issue_refund", {"order_id": o, "amount": 40}, {"status": "paid"})),
        bot(None, call("record_resolution", {"outcome": "refunded"}, {"ok": True})),
        bot("Your refund of 40 is on its way.", latency_ms=20_000),
        user("Thanks, bye."),
        session_id=f"prod-refund-{number}",
        user_id=user_of(number),
    )
    return _case(built, "sampling:forced_attribute", "refund", number)


def status_case(number: int) -> Case:
    """Recorded on v0 when lookup_order failed once (force-sampled for the tool error)."""
    o = order(number)
    built = session(
        user(f"Where is my order {o}?"),
        bot(None, call("lookup_order", {"order_id": o}, None, error="timeout")),
        bot(None, call("lookup_order", {"order_id": o}, {"status": "shipped"})),
        bot(None, call("record_resolution", {"outcome": "resolved"}, {"ok": True})),
        bot("Your order has shipped."),
        user("Thanks, bye."),
        session_id=f"prod-status-{number}",
        user_id=user_of(number),
    )
    return _case(built, "sampling:forced_tool_error", "status", number)


def cases(addresses: int, refunds: int, statuses: int, start: int = 1) -> list[Case]:
    """Distinct tokens for every case: no two cases share an order, address or user."""
    numbers = itertools.count(start)
    return [
        *(address_case(next(numbers)) for _ in range(addresses)),
        *(refund_case(next(numbers)) for _ in range(refunds)),
        *(status_case(next(numbers)) for _ in range(statuses)),
    ]
