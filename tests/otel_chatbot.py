"""A scripted support chatbot that emits real OTel GenAI spans through the OTel SDK."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.trace import SpanKind, Status, StatusCode


@dataclass
class Exchange:
    user: str
    answer: str
    tool: str | None = None
    tool_arguments: dict = field(default_factory=dict)
    tool_result: object = None
    tool_fails: bool = False


SUPPORT_EXCHANGES = [
    Exchange(
        user="Hi, where is my order 4411?",
        answer="Your order 4411 ships tomorrow.",
        tool="lookup_order",
        tool_arguments={"order_id": "4411"},
        tool_result={"status": "packed", "ship_date": "tomorrow"},
    ),
    Exchange(user="Can I change the address?", answer="Yes, what is the new address?"),
    Exchange(
        user="12 Baker Street, London",
        answer="Done: the address is updated.",
        tool="update_address",
        tool_arguments={"order_id": "4411", "address": "12 Baker Street"},
        tool_result={"ok": True},
    ),
]

SYSTEM_PROMPT = "You are a helpful support agent for Acme."


def provider_with(processor: SpanProcessor, service: str = "support-bot") -> TracerProvider:
    provider = TracerProvider(
        resource=Resource.create({"service.name": service, "service.version": "1.4.2"})
    )
    provider.add_span_processor(processor)
    return provider


def _text(role: str, content: str) -> dict:
    return {"role": role, "parts": [{"type": "text", "content": content}]}


def run_conversation(
    provider: TracerProvider,
    conversation_id: str,
    exchanges: list[Exchange],
    user_id: str = "user-7",
    model: str = "gpt-4o-mini",
) -> None:
    """Emit one conversation the way a stateless chat API client does: full history each call."""
    tracer = provider.get_tracer("acme.support", "1.0")
    history: list[dict] = []
    for number, exchange in enumerate(exchanges):
        with tracer.start_as_current_span("POST /chat", kind=SpanKind.SERVER) as root:
            root.set_attribute("user.id", user_id)
            root.set_attribute("session.id", conversation_id)
            history.append(_text("user", exchange.user))
            if exchange.tool:
                call_id = f"call_{number}"
                call = {
                    "role": "assistant",
                    "parts": [
                        {
                            "type": "tool_call",
                            "id": call_id,
                            "name": exchange.tool,
                            "arguments": exchange.tool_arguments,
                        }
                    ],
                }
                _chat(
                    tracer,
                    conversation_id,
                    model,
                    history,
                    [{**call, "finish_reason": "tool_call"}],
                )
                history.append(call)
                with tracer.start_as_current_span(
                    f"execute_tool {exchange.tool}", kind=SpanKind.INTERNAL
                ) as tool_span:
                    tool_span.set_attribute("gen_ai.operation.name", "execute_tool")
                    tool_span.set_attribute("gen_ai.tool.name", exchange.tool)
                    tool_span.set_attribute("gen_ai.tool.call.id", call_id)
                    tool_span.set_attribute(
                        "gen_ai.tool.call.arguments", json.dumps(exchange.tool_arguments)
                    )
                    if exchange.tool_fails:
                        tool_span.set_status(Status(StatusCode.ERROR, "backend down"))
                        tool_span.set_attribute("error.type", "TimeoutError")
                    else:
                        tool_span.set_attribute(
                            "gen_ai.tool.call.result", json.dumps(exchange.tool_result)
                        )
                history.append(
                    {
                        "role": "tool",
                        "parts": [
                            {
                                "type": "tool_call_response",
                                "id": call_id,
                                "response": exchange.tool_result,
                            }
                        ],
                    }
                )
            answer = _text("assistant", exchange.answer)
            _chat(tracer, conversation_id, model, history, [{**answer, "finish_reason": "stop"}])
            history.append(answer)


def _chat(
    tracer, conversation_id: str, model: str, inputs: list[dict], outputs: list[dict]
) -> None:
    with tracer.start_as_current_span(f"chat {model}", kind=SpanKind.CLIENT) as span:
        span.set_attribute("gen_ai.operation.name", "chat")
        span.set_attribute("gen_ai.provider.name", "openai")
        span.set_attribute("gen_ai.request.model", model)
        span.set_attribute("gen_ai.response.model", model)
        span.set_attribute("gen_ai.conversation.id", conversation_id)
        span.set_attribute(
            "gen_ai.system_instructions", json.dumps([{"type": "text", "content": SYSTEM_PROMPT}])
        )
        span.set_attribute("gen_ai.input.messages", json.dumps(inputs))
        span.set_attribute("gen_ai.output.messages", json.dumps(outputs))
        span.set_attribute("gen_ai.usage.input_tokens", 40 * len(inputs))
        span.set_attribute("gen_ai.usage.output_tokens", 12)
