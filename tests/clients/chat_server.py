"""A loopback OpenAI-compatible chat completions server that answers from the scenario.

It speaks the real wire protocol (JSON, and server-sent events when a client streams), so each
client library runs its own request and response code against it.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.clients.scenario import MODEL, reply


def _usage(messages: list[dict[str, Any]]) -> dict[str, int]:
    prompt = 12 * len(messages)
    return {"prompt_tokens": prompt, "completion_tokens": 9, "total_tokens": prompt + 9}


def completion(request: dict[str, Any], number: int) -> dict[str, Any]:
    message = reply(request["messages"])
    return {
        "id": f"chatcmpl-{number}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": MODEL,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if message.get("tool_calls") else "stop",
            }
        ],
        "usage": _usage(request["messages"]),
    }


def chunks(answer: dict[str, Any]) -> list[dict[str, Any]]:
    """The same completion as a stream: the message in one delta, then the finish and usage."""
    choice = answer["choices"][0]
    message = dict(choice["message"])
    if "tool_calls" in message:
        message["tool_calls"] = [
            dict(call, index=i) for i, call in enumerate(message["tool_calls"])
        ]
    head = {key: answer[key] for key in ("id", "created", "model")}
    head["object"] = "chat.completion.chunk"
    return [
        {**head, "choices": [{"index": 0, "delta": message, "finish_reason": None}]},
        {**head, "choices": [{"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}]},
        {**head, "choices": [], "usage": answer["usage"]},
    ]


class ChatServer:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:  # keep test output clean
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                    return
                request = json.loads(body)
                with server._lock:
                    server.requests.append(request)
                    number = len(server.requests)
                try:
                    answer = completion(request, number)
                except ValueError as exc:
                    self._send(400, {"error": {"message": str(exc), "type": "invalid_request"}})
                    return
                if request.get("stream"):
                    self._stream(chunks(answer))
                else:
                    self._send(200, answer)

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _stream(self, events: list[dict[str, Any]]) -> None:
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.end_headers()
                for event in events:
                    self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
                self.wfile.write(b"data: [DONE]\n\n")
                self.close_connection = True

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def start(self) -> ChatServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
