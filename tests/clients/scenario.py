"""The conversation every client library plays: two conversations of four user turns, the whole
history resent on every model call, and one tool round trip in each.

Plain standard library: the client scripts import it from their own virtualenvs, the loopback
chat server answers from it, and the tests check the rebuilt sessions against it.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from typing import Any

SYSTEM_PROMPT = "You are the support assistant of a parcel shop. Answer briefly."
TOOL_NAME = "lookup_parcel"
TOOL_DESCRIPTION = "Look up where a parcel is, by the colour of its label."
TOOL_PARAMETERS = {
    "type": "object",
    "properties": {"label": {"type": "string", "description": "colour of the parcel's label"}},
    "required": ["label"],
    "additionalProperties": False,
}
MODEL = "parcel-model-1"


@dataclass(frozen=True)
class Exchange:
    user: str
    answer: str
    tool_label: str | None = None
    """When set, the model first calls the tool with this label, then answers."""


@dataclass(frozen=True)
class Conversation:
    name: str
    exchanges: tuple[Exchange, ...]


CONVERSATIONS = (
    Conversation(
        "first",
        (
            Exchange("Hello, I have a question about my parcel.", "Of course, what is it?"),
            Exchange(
                "Where is the parcel with the blue label?",
                "The parcel with the blue label is packed and waits for pickup.",
                tool_label="blue",
            ),
            Exchange("Can I change the pickup point?", "Yes, choose a new point in the app."),
            Exchange("Thanks, that is all.", "Glad to help, goodbye!"),
        ),
    ),
    Conversation(
        "second",
        (
            Exchange("Good morning, a parcel question please.", "Sure, go ahead."),
            Exchange(
                "What happened to the parcel with the green label?",
                "The parcel with the green label is on its way to the pickup point.",
                tool_label="green",
            ),
            Exchange("Will it be there soon?", "Yes, it is nearly there."),
            Exchange("Great, bye.", "Goodbye and thanks for asking!"),
        ),
    ),
)
EXCHANGES = {exchange.user: exchange for c in CONVERSATIONS for exchange in c.exchanges}


def tool_result(label: str) -> dict[str, str]:
    """What the chatbot's tool returns (the same in every library)."""
    return {"label": label, "status": "packed" if label == "blue" else "in transit"}


def lookup_parcel(label: str) -> str:
    """The tool as a chatbot registers it: JSON text in, JSON text out."""
    return json.dumps(tool_result(label))


def call_id(user_text: str) -> str:
    return "call_" + hashlib.sha256(user_text.encode()).hexdigest()[:12]


def conversation_id(run: str, conversation: Conversation) -> str:
    return f"{run}-{conversation.name}"


def user_id(conversation: Conversation) -> str:
    return f"customer-{conversation.name}"


@dataclass(frozen=True)
class Settings:
    """What a client script is told by the test, through its environment."""

    otlp_endpoint: str
    """OTLP/HTTP base URL (`http://127.0.0.1:PORT`)."""
    chat_base_url: str
    """The loopback OpenAI-compatible server (`http://127.0.0.1:PORT/v1`)."""
    service: str
    run: str
    """Prefix of this run's conversation ids."""

    @classmethod
    def from_environment(cls) -> Settings:
        return cls(
            otlp_endpoint=os.environ["SCENARIO_OTLP_ENDPOINT"],
            chat_base_url=os.environ["SCENARIO_CHAT_BASE_URL"],
            service=os.environ["SCENARIO_SERVICE"],
            run=os.environ["SCENARIO_RUN"],
        )

    def environment(self) -> dict[str, str]:
        return {
            "SCENARIO_OTLP_ENDPOINT": self.otlp_endpoint,
            "SCENARIO_CHAT_BASE_URL": self.chat_base_url,
            "SCENARIO_SERVICE": self.service,
            "SCENARIO_RUN": self.run,
            "SCENARIO_JSON": json.dumps(self.plan()),
        }

    def plan(self) -> dict[str, Any]:
        """The scenario as data, for client scripts that are not written in Python."""
        return {
            "model": MODEL,
            "system": SYSTEM_PROMPT,
            "tool": {
                "name": TOOL_NAME,
                "description": TOOL_DESCRIPTION,
                "parameters": TOOL_PARAMETERS,
                "results": {
                    e.tool_label: tool_result(e.tool_label)
                    for e in EXCHANGES.values()
                    if e.tool_label is not None
                },
            },
            "conversations": [
                {
                    "id": conversation_id(self.run, conversation),
                    "user": user_id(conversation),
                    "messages": [exchange.user for exchange in conversation.exchanges],
                }
                for conversation in CONVERSATIONS
            ],
        }

    @property
    def traces_url(self) -> str:
        return f"{self.otlp_endpoint}/v1/traces"


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return ""


def reply(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """The loopback model: the scripted answer to the last user message, through the tool
    first when that exchange has one. Returns an OpenAI chat completion `message`."""
    users = [i for i, m in enumerate(messages) if m.get("role") == "user"]
    if not users:
        raise ValueError("no user message in the request")
    last_user = users[-1]
    exchange = EXCHANGES.get(_text(messages[last_user].get("content")).strip())
    if exchange is None:
        raise ValueError("the last user message is not in the scenario")
    answered_by_tool = any(m.get("role") == "tool" for m in messages[last_user + 1 :])
    if exchange.tool_label is None or answered_by_tool:
        return {"role": "assistant", "content": exchange.answer}
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": call_id(exchange.user),
                "type": "function",
                "function": {
                    "name": TOOL_NAME,
                    "arguments": json.dumps({"label": exchange.tool_label}),
                },
            }
        ],
    }
