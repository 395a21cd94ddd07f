"""The replay target's side: an OpenAI-compatible chat client, and the recorded tool results that
answer the tools the new version calls.

When the new version asks for a tool, replay answers with the recorded result of the same tool
(the first unused recorded call with the same arguments, else the first unused one of that
tool): the trajectory is replayed, not re-executed, so no side effect reaches a real system. A
tool the recorded trace never called gets a placeholder answer and is listed as unrecorded.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

import httpx
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from turnwatch.exporters.regressions.model import CaseToolCall, CaseTurn
from turnwatch.scorers.contract import Contract

from turnwatch.schema import JsonValue, TokenUsage, ToolCall

UNRECORDED = {"replay": "no recorded result for this tool"}


class ReplayError(Exception):
    """The target could not be used (transport error, HTTP error, malformed answer)."""


class _Answer(BaseModel):
    """The parts of a chat completion replay reads; the rest of the body is ignored."""

    model_config = ConfigDict(extra="ignore")

    class Choice(BaseModel):
        model_config = ConfigDict(extra="ignore")
        message: dict[str, JsonValue]

    class Usage(BaseModel):
        model_config = ConfigDict(extra="ignore")
        prompt_tokens: int | None = Field(default=None, ge=0)
        completion_tokens: int | None = Field(default=None, ge=0)

    choices: list[Choice] = Field(min_length=1)
    model: str | None = None
    usage: Usage | None = None


@dataclass(frozen=True, slots=True)
class Completion:
    """One assistant message, with what the session's budgets are measured from."""

    message: dict[str, JsonValue]
    latency_ms: float
    usage: TokenUsage | None
    model: str | None


class ChatClient:
    """A minimal OpenAI-compatible chat completions client."""

    def __init__(
        self,
        target: str,
        timeout: float = 30.0,
        api_key: str | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        url = target.rstrip("/")
        self.url = url if url.endswith("/chat/completions") else f"{url}/chat/completions"
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = httpx.Client(timeout=timeout, headers=headers, transport=transport)

    def complete(
        self,
        model: str,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        **options: JsonValue,
    ) -> Completion:
        body: dict[str, Any] = {"model": model, "messages": messages, **options}
        if tools:
            body["tools"] = tools
        started = time.perf_counter()
        try:
            response = self._http.post(self.url, json=body)
        except httpx.HTTPError as exc:
            raise ReplayError(f"cannot reach the target ({type(exc).__name__})") from None
        latency_ms = (time.perf_counter() - started) * 1000
        if response.status_code != 200:
            raise ReplayError(f"the target answered HTTP {response.status_code}")
        try:
            answer = _Answer.model_validate_json(response.content)
        except ValidationError:
            raise ReplayError("the target's answer is not a chat completion") from None
        usage = answer.usage
        tokens = (
            TokenUsage(input_tokens=usage.prompt_tokens, output_tokens=usage.completion_tokens)
            if usage is not None
            else None
        )
        return Completion(answer.choices[0].message, latency_ms, tokens, answer.model)

    def close(self) -> None:
        self._http.close()


class RecordedTools:
    """The recorded tool calls of a case, handed out once each."""

    def __init__(self, turns: list[CaseTurn]) -> None:
        self.calls = [call for turn in turns for call in turn.tool_calls or []]
        self.used: set[int] = set()

    def answer(self, name: str, arguments: Any) -> CaseToolCall | None:
        candidates = [
            i for i, call in enumerate(self.calls) if call.name == name and i not in self.used
        ]
        same = [i for i in candidates if self.calls[i].arguments == arguments]
        chosen = (same or candidates or [None])[0]
        if chosen is None:
            return None
        self.used.add(chosen)
        return self.calls[chosen]


def openai_tools(turns: list[CaseTurn], contract: Contract | None) -> list[dict[str, Any]]:
    if contract is not None:
        declared = {
            name: (tool.description, tool.arguments) for name, tool in contract.tools.items()
        }
    else:
        recorded = RecordedTools(turns).calls
        declared = {call.name: ("", {"type": "object"}) for call in recorded}
    return [
        {
            "type": "function",
            "function": {"name": name, "description": description, "parameters": schema},
        }
        for name, (description, schema) in declared.items()
    ]


def _arguments(raw: Any) -> Any:
    if isinstance(raw, str):
        try:
            return json.loads(raw) if raw.strip() else {}
        except ValueError:
            return raw
    return raw


def answer_tools(
    requested: list[Any], recorded: RecordedTools, unrecorded: list[str]
) -> tuple[list[ToolCall], list[dict[str, Any]]]:
    """The calls the new version asked for, answered from the recording, and the tool messages
    that carry the answers back; a tool never recorded is appended to `unrecorded`."""
    calls, replies = [], []
    for number, item in enumerate(requested):
        if not isinstance(item, dict):
            continue
        function = item.get("function") or {}
        name = str(function.get("name") or "unknown")
        call_id = str(item.get("id") or f"replay_{number}")
        arguments = _arguments(function.get("arguments"))
        answer = recorded.answer(name, arguments)
        if answer is None:
            unrecorded.append(name)
            calls.append(ToolCall(id=call_id, name=name, arguments=arguments))
            content: Any = UNRECORDED
        else:
            calls.append(
                ToolCall(
                    id=call_id,
                    name=name,
                    arguments=arguments,
                    result=answer.result,
                    error=answer.error,
                    duration_ms=answer.duration_ms,
                )
            )
            content = {"error": answer.error} if answer.error else answer.result
        replies.append(
            {
                "role": "tool",
                "tool_call_id": call_id,
                "content": content if isinstance(content, str) else json.dumps(content),
            }
        )
    return calls, replies
