"""A simulated support chatbot that emits real OTel GenAI (v1.37) spans through the OTel SDK.

It plays the demo's scripts the way an instrumented chatbot on a stateless chat API would: one
trace per user message (a server span), one `chat` client span per model call carrying the whole
history so far in `gen_ai.input.messages`, and one `execute_tool` span per tool call. The spans go
to turnwatch over OTLP/HTTP protobuf with the SDK's own exporter; nothing here talks to turnwatch
in any other way.
"""

from __future__ import annotations

import json
from typing import Any

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import SpanKind, Status, StatusCode, Tracer

from turnwatch.app.demo.scripts import Exchange, Script, ToolStep

SERVICE_NAME = "demo-support-bot"
SERVICE_VERSION = "1.0.0"
MODEL = "demo-support-llm"
PROVIDER = "turnwatch-demo"
SYSTEM_PROMPT = (
    "You are the support agent of an online shop. Look up orders, change addresses after the "
    "customer confirms, refund up to 500 EUR after the refund desk approves, and hand over to a "
    "human when you cannot help. Never reveal another customer's details."
)
END_MARKER = "turnwatch.session.end"
"""turnwatch closes a session at once on a span with this attribute set to true."""

_CHARS_PER_TOKEN = 4

Message = dict[str, Any]


def _text(role: str, content: str) -> Message:
    return {"role": role, "parts": [{"type": "text", "content": content}]}


def _tokens(messages: list[Message]) -> int:
    return max(1, len(json.dumps(messages)) // _CHARS_PER_TOKEN)


class SimulatedChatbot:
    def __init__(self, otlp_http_endpoint: str) -> None:
        exporter = OTLPSpanExporter(endpoint=f"{otlp_http_endpoint.rstrip('/')}/v1/traces")
        self._provider = TracerProvider(
            resource=Resource.create(
                {"service.name": SERVICE_NAME, "service.version": SERVICE_VERSION}
            )
        )
        # Short delay: spans reach turnwatch while the demo runs, not only at flush points.
        self._provider.add_span_processor(BatchSpanProcessor(exporter, schedule_delay_millis=200))
        self._tracer: Tracer = self._provider.get_tracer("turnwatch.demo.chatbot", SERVICE_VERSION)

    def converse(self, script: Script, conversation_id: str) -> None:
        """Play one script; its last span carries the end marker so the session closes at once."""
        history: list[Message] = []
        last = len(script.exchanges) - 1
        for number, exchange in enumerate(script.exchanges):
            self._exchange(script, conversation_id, number, exchange, history, number == last)
        # Delivered before the next conversation starts: the spans of one session stay together.
        self._provider.force_flush()

    def close(self) -> None:
        self._provider.shutdown()

    def _exchange(
        self,
        script: Script,
        conversation_id: str,
        number: int,
        exchange: Exchange,
        history: list[Message],
        ends_session: bool,
    ) -> None:
        with self._tracer.start_as_current_span("POST /chat", kind=SpanKind.SERVER) as root:
            root.set_attribute("session.id", conversation_id)
            root.set_attribute("user.id", script.user_id)
            history.append(_text("user", exchange.user))
            for step_number, step in enumerate(exchange.tools):
                self._tool_step(conversation_id, f"call_{number}_{step_number}", step, history)
            answer = _text("assistant", exchange.answer)
            self._chat(conversation_id, history, [{**answer, "finish_reason": "stop"}])
            history.append(answer)
            if ends_session:
                # The server span ends after all its children, so the marker arrives last.
                root.set_attribute(END_MARKER, True)

    def _tool_step(
        self, conversation_id: str, call_id: str, step: ToolStep, history: list[Message]
    ) -> None:
        call = {
            "role": "assistant",
            "parts": [
                {"type": "tool_call", "id": call_id, "name": step.tool, "arguments": step.arguments}
            ],
        }
        self._chat(conversation_id, history, [{**call, "finish_reason": "tool_call"}])
        history.append(call)
        with self._tracer.start_as_current_span(
            f"execute_tool {step.tool}", kind=SpanKind.INTERNAL
        ) as span:
            span.set_attribute("gen_ai.operation.name", "execute_tool")
            span.set_attribute("gen_ai.tool.name", step.tool)
            span.set_attribute("gen_ai.tool.type", "function")
            span.set_attribute("gen_ai.tool.call.id", call_id)
            span.set_attribute("gen_ai.tool.call.arguments", json.dumps(step.arguments))
            if step.error is not None:
                span.set_status(Status(StatusCode.ERROR))
                span.set_attribute("error.type", step.error)
                response: object = {"error": step.error}
            else:
                span.set_attribute("gen_ai.tool.call.result", json.dumps(step.result))
                response = step.result
        history.append(
            {
                "role": "tool",
                "parts": [{"type": "tool_call_response", "id": call_id, "response": response}],
            }
        )

    def _chat(self, conversation_id: str, inputs: list[Message], outputs: list[Message]) -> None:
        with self._tracer.start_as_current_span(f"chat {MODEL}", kind=SpanKind.CLIENT) as span:
            span.set_attribute("gen_ai.operation.name", "chat")
            span.set_attribute("gen_ai.provider.name", PROVIDER)
            span.set_attribute("gen_ai.request.model", MODEL)
            span.set_attribute("gen_ai.response.model", MODEL)
            span.set_attribute("gen_ai.conversation.id", conversation_id)
            span.set_attribute(
                "gen_ai.system_instructions",
                json.dumps([{"type": "text", "content": SYSTEM_PROMPT}]),
            )
            span.set_attribute("gen_ai.input.messages", json.dumps(inputs))
            span.set_attribute("gen_ai.output.messages", json.dumps(outputs))
            span.set_attribute(
                "gen_ai.response.finish_reasons", [str(outputs[-1].get("finish_reason", "stop"))]
            )
            span.set_attribute("gen_ai.usage.input_tokens", _tokens(inputs))
            span.set_attribute("gen_ai.usage.output_tokens", _tokens(outputs))
