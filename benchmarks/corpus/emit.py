"""Emit corpus conversations as real OTel GenAI spans through the OTel SDK.

Two span shapes, as instrumented chatbots produce them:

- `agent`: one trace per user message, an `invoke_agent` span (the agent's own input and final
  answer) with a `chat` child per model call (whole history in `gen_ai.input.messages`, system
  prompt in `gen_ai.system_instructions`) and an `execute_tool` child per tool call; tool-call
  messages carry no text.
- `chat`: one trace per user message under a server span, `chat` spans whose output message
  holds text and tool calls together, the system prompt as a system message in the history.

Both name the conversation with `gen_ai.conversation.id`, the user with `user.id` and the
service with the resource's `service.name`; the last span of a conversation carries the end
marker, so turnwatch closes it at once. Timestamps are synthetic (a user types for seconds, a
model call takes one to three), starting a little before now.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Iterator
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import SpanKind, Status, StatusCode, Tracer

from benchmarks.corpus.model import Conversation, Message

END_MARKER = "turnwatch.session.end"
MODEL = "gpt-4o-mini-2024-07-18"
MS = 1_000_000


def _text_message(role: str, text: str) -> dict[str, Any]:
    return {"role": role, "parts": [{"type": "text", "content": text}]}


def _assistant(message: Message) -> dict[str, Any]:
    parts: list[dict[str, Any]] = []
    if message.text:
        parts.append({"type": "text", "content": message.text})
    parts += [
        {"type": "tool_call", "id": call.id, "name": call.name, "arguments": call.arguments}
        for call in message.calls
    ]
    return {"role": "assistant", "parts": parts}


def _responses(message: Message) -> list[dict[str, Any]]:
    return [
        {
            "role": "tool",
            "parts": [
                {
                    "type": "tool_call_response",
                    "id": call.id,
                    "response": {"error": call.error} if call.error else call.result,
                }
            ],
        }
        for call in message.calls
    ]


def exchanges(conversation: Conversation) -> Iterator[tuple[Message, list[Message]]]:
    """(user message, the assistant messages answering it) in order."""
    current: tuple[Message, list[Message]] | None = None
    for message in conversation.messages:
        if message.role == "user":
            if current is not None:
                yield current
            current = (message, [])
        else:
            assert current is not None
            current[1].append(message)
    if current is not None:
        yield current


class Clock:
    def __init__(self, rng: random.Random, start_ns: int) -> None:
        self.rng = rng
        self.now = start_ns

    def advance(self, low_ms: int, high_ms: int) -> int:
        self.now += self.rng.randint(low_ms, high_ms) * MS
        return self.now


def _tokens(payload: object) -> int:
    return max(1, len(json.dumps(payload)) // 4)


class Emitter:
    """One tracer provider per service (the service name lives in the resource)."""

    def __init__(self, providers: dict[str, TracerProvider]) -> None:
        self.providers = providers

    def emit(self, conversation: Conversation) -> None:
        provider = self.providers[conversation.service]
        tracer = provider.get_tracer("support-bot.instrumentation", "2.3.0")
        rng = random.Random(conversation.conversation_id)
        duration = 30_000 * len(conversation.messages)
        clock = Clock(rng, time.time_ns() - duration * MS)
        history: list[dict[str, Any]] = []
        if conversation.shape == "chat":
            history.append(_text_message("system", conversation.system_prompt))
        rounds = list(exchanges(conversation))
        for number, (user, answers) in enumerate(rounds):
            self._exchange(
                tracer, conversation, clock, history, user, answers, number == len(rounds) - 1
            )
        provider.force_flush()

    def _exchange(
        self,
        tracer: Tracer,
        conversation: Conversation,
        clock: Clock,
        history: list[dict[str, Any]],
        user: Message,
        answers: list[Message],
        last: bool,
    ) -> None:
        agent = conversation.shape == "agent"
        start = clock.advance(3_000, 40_000)
        root = tracer.start_span(
            "invoke_agent support_agent" if agent else "POST /v1/chat",
            kind=SpanKind.INTERNAL if agent else SpanKind.SERVER,
            start_time=start,
        )
        root.set_attribute("user.id", conversation.user.customer_id)
        if agent:
            root.set_attribute("gen_ai.operation.name", "invoke_agent")
            root.set_attribute("gen_ai.agent.name", "support_agent")
            root.set_attribute("gen_ai.conversation.id", conversation.conversation_id)
        context = trace.set_span_in_context(root)
        assert user.text is not None
        history.append(_text_message("user", user.text))
        final = None
        for answer in answers:
            output = _assistant(answer)
            self._chat(tracer, context, conversation, clock, history, output, bool(answer.calls))
            history.append(output)
            for call in answer.calls:
                self._tool(tracer, context, clock, call)
            history.extend(_responses(answer))
            if answer.text and not answer.calls:
                final = answer.text
        if agent:
            root.set_attribute(
                "gen_ai.input.messages", json.dumps([_text_message("user", user.text)])
            )
            if final is not None:
                outputs = [{**_text_message("assistant", final), "finish_reason": "stop"}]
                root.set_attribute("gen_ai.output.messages", json.dumps(outputs))
        if last:
            root.set_attribute(END_MARKER, True)
        root.end(end_time=clock.advance(1, 20))

    def _chat(
        self,
        tracer: Tracer,
        context: Any,
        conversation: Conversation,
        clock: Clock,
        history: list[dict[str, Any]],
        output: dict[str, Any],
        calls_tools: bool,
    ) -> None:
        finish = "tool_call" if calls_tools else "stop"
        span = tracer.start_span(
            f"chat {MODEL}", context=context, kind=SpanKind.CLIENT, start_time=clock.advance(5, 50)
        )
        span.set_attribute("gen_ai.operation.name", "chat")
        span.set_attribute("gen_ai.provider.name", "openai")
        span.set_attribute("gen_ai.request.model", "gpt-4o-mini")
        span.set_attribute("gen_ai.response.model", MODEL)
        span.set_attribute("gen_ai.conversation.id", conversation.conversation_id)
        if conversation.shape == "agent":
            instructions = [{"type": "text", "content": conversation.system_prompt}]
            span.set_attribute("gen_ai.system_instructions", json.dumps(instructions))
        span.set_attribute("gen_ai.input.messages", json.dumps(history))
        span.set_attribute(
            "gen_ai.output.messages", json.dumps([{**output, "finish_reason": finish}])
        )
        span.set_attribute("gen_ai.response.finish_reasons", [finish])
        span.set_attribute("gen_ai.usage.input_tokens", _tokens(history))
        span.set_attribute("gen_ai.usage.output_tokens", _tokens(output))
        span.end(end_time=clock.advance(700, 3_000))

    def _tool(self, tracer: Tracer, context: Any, clock: Clock, call: Any) -> None:
        span = tracer.start_span(
            f"execute_tool {call.name}",
            context=context,
            kind=SpanKind.INTERNAL,
            start_time=clock.advance(1, 10),
        )
        span.set_attribute("gen_ai.operation.name", "execute_tool")
        span.set_attribute("gen_ai.tool.name", call.name)
        span.set_attribute("gen_ai.tool.type", "function")
        span.set_attribute("gen_ai.tool.call.id", call.id)
        span.set_attribute("gen_ai.tool.call.arguments", json.dumps(call.arguments))
        if call.error:
            span.set_status(Status(StatusCode.ERROR, "tool call failed"))
            span.set_attribute("error.type", call.error)
            span.end(end_time=clock.advance(5_000, 10_000))
            return
        span.set_attribute("gen_ai.tool.call.result", json.dumps(call.result))
        span.end(end_time=clock.advance(40, 900))
