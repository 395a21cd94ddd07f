"""A local OpenAI-compatible chat-completions server for judge tests and the cost benchmark.

Real HTTP on loopback: it records every request, answers scripted replies first (status, headers,
body, delay) and otherwise answers valid verdicts computed from the prompt, so every metric can
run against it. Usage is reported as characters / 4 of the messages, the estimate turnwatch uses.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.otlp_requests import LOOPBACK


@dataclass
class Reply:
    status: int = 200
    content: str | None = None  # the assistant message content (for status 200)
    body: Any = None  # a raw JSON body instead (any status)
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    drip: float = 0.0  # seconds between body bytes: every read succeeds, the body never ends
    refusal: str | None = None
    logprobs: Any = None


def score_logprobs(alternatives: list[dict[str, Any]]) -> dict[str, Any]:
    """Logprobs of the G-Eval answer `{"score": 7}` token by token, `alternatives` at the score."""
    lead = [{"token": text, "logprob": 0.0, "top_logprobs": []} for text in ('{"', "score", '": ')]
    score = {"token": "7", "logprob": -0.1, "top_logprobs": alternatives}
    return {"content": [*lead, score, {"token": "}", "logprob": 0.0, "top_logprobs": []}]}


def _tokens(text: str) -> int:
    return len(text) // 4 + 1


def prompt_of(request: dict[str, Any]) -> str:
    return request["messages"][1]["content"]


def auto_answer(request: dict[str, Any], irrelevant_turns: set[int], ooc: set[int]) -> str:
    """A valid answer to whichever turnwatch prompt this is."""
    text = prompt_of(request)
    if text.startswith("Task: turn relevancy"):
        verdicts = []
        for number, replies in re.findall(r"^window (\d+): reply turn\(s\) ([\d, ]+);", text, re.M):
            bad = {int(turn) for turn in replies.split(",")} & irrelevant_turns
            verdicts.append({"window": int(number), "verdict": "no" if bad else "yes"})
        return json.dumps({"verdicts": verdicts})
    if text.startswith("Task: role adherence"):
        shown = {int(n) for n in re.findall(r"^\[(\d+)\] assistant:", text, re.M)}
        return json.dumps({"out_of_character": [{"turn": t} for t in sorted(shown & ooc)]})
    if text.startswith("Task: extract facts"):
        turns = [int(n) for n in re.findall(r"^\[(\d+)\] user:", text, re.M)]
        return json.dumps({"facts": [{"turn": t, "fact": f"fact of turn {t}"} for t in turns]})
    if text.startswith("Task: knowledge retention"):
        return json.dumps({"attritions": []})
    if text.startswith("Task: user intentions"):
        return json.dumps({"intentions": ["get a refund", "change the email", "track the order"]})
    if text.startswith("Task: conversation completeness"):
        numbers = re.findall(r"^(\d+)\. ", text.split("Conversation:")[0], re.M)
        return json.dumps({"verdicts": [{"intention": int(n), "verdict": "yes"} for n in numbers]})
    if text.startswith("Task: write evaluation steps"):
        return json.dumps({"steps": ["Read the conversation.", "Check the criterion."]})
    if text.startswith("Task: score a conversation"):
        return json.dumps({"score": 7, "reason": "mostly meets it"})
    return json.dumps({})


class LoopbackJudge:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.scripted: list[Reply] = []
        self.irrelevant_turns: set[int] = set()
        self.out_of_character: set[int] = set()
        self.responder: Callable[[dict[str, Any]], Reply | None] | None = None
        self.prompt_tokens = 0
        self._lock = threading.Lock()
        judge = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:  # keep test output clean
                pass

            def drip(self, payload: bytes, interval: float) -> None:
                for byte in payload:
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
                    time.sleep(interval)

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", "0"))
                request = json.loads(self.rfile.read(length))
                reply = judge._reply(request, dict(self.headers))
                if reply.delay:
                    time.sleep(reply.delay)
                payload = json.dumps(judge._body(request, reply)).encode()
                try:
                    self.send_response(reply.status)
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(payload)))
                    self.end_headers()
                    if reply.drip:
                        self.drip(payload, reply.drip)
                    else:
                        self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client timed out first

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def _reply(self, request: dict[str, Any], headers: dict[str, str]) -> Reply:
        with self._lock:
            self.requests.append(request)
            self.headers.append({k.lower(): v for k, v in headers.items()})
            self.prompt_tokens += sum(_tokens(m["content"]) + 4 for m in request["messages"])
            if self.scripted:
                return self.scripted.pop(0)
        if self.responder is not None:
            reply = self.responder(request)
            if reply is not None:
                return reply
        return Reply(content=auto_answer(request, self.irrelevant_turns, self.out_of_character))

    def _body(self, request: dict[str, Any], reply: Reply) -> Any:
        if reply.body is not None:
            return reply.body
        content = (
            reply.content
            if reply.content is not None
            else auto_answer(request, self.irrelevant_turns, self.out_of_character)
        )
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if reply.refusal is not None:
            message = {"role": "assistant", "content": None, "refusal": reply.refusal}
        choice: dict[str, Any] = {"index": 0, "message": message, "finish_reason": "stop"}
        if reply.logprobs is not None:
            choice["logprobs"] = reply.logprobs
        prompt = sum(_tokens(m["content"]) + 4 for m in request["messages"])
        return {
            "id": "cmpl-loopback",
            "object": "chat.completion",
            "model": request.get("model"),
            "choices": [choice],
            "usage": {"prompt_tokens": prompt, "completion_tokens": _tokens(content or "")},
        }

    def prompts(self, task: str) -> list[str]:
        return [prompt_of(r) for r in self.requests if prompt_of(r).startswith(f"Task: {task}")]

    def start(self) -> LoopbackJudge:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@contextmanager
def running() -> Iterator[LoopbackJudge]:
    server = LoopbackJudge().start()
    try:
        yield server
    finally:
        server.stop()


def test_loopback_answers_and_records():

    with running() as server:
        body = {
            "model": "m",
            "messages": [
                {"role": "system", "content": "s"},
                {"role": "user", "content": "Task: x"},
            ],
        }
        response = LOOPBACK.post(f"{server.base_url}/chat/completions", json=body)
        assert response.status_code == 200
        assert response.json()["choices"][0]["message"]["content"] == "{}"
        assert server.requests == [body]
