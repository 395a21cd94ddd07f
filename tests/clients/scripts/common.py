"""What the client scripts share: the OTel SDK pipeline most libraries document, and the chat
loop a chatbot writes around the plain `openai` client (tools answered, history resent).

Runs inside a client virtualenv (the library under test, `openai`, the OTel SDK), never
importing turnwatch.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from scenario import (
    MODEL,
    SYSTEM_PROMPT,
    TOOL_DESCRIPTION,
    TOOL_NAME,
    TOOL_PARAMETERS,
    Conversation,
    Settings,
    conversation_id,
    lookup_parcel,
    user_id,
)

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": TOOL_NAME,
            "description": TOOL_DESCRIPTION,
            "parameters": TOOL_PARAMETERS,
        },
    }
]


def tracer_provider(settings: Settings, processor: str = "batch") -> Any:
    """The SDK set-up the libraries' docs show: a TracerProvider with the service's resource
    and an OTLP/HTTP span exporter behind a batch processor."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    provider = TracerProvider(resource=Resource.create({"service.name": settings.service}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=settings.traces_url)))
    return provider


def openai_client(settings: Settings) -> Any:
    from openai import OpenAI

    return OpenAI(base_url=settings.chat_base_url, api_key="loopback", max_retries=0)


Ask = Callable[[list[dict[str, Any]]], Any]
"""messages -> the model's reply message (an `openai` ChatCompletionMessage)."""


def play(conversation: Conversation, ask: Ask) -> None:
    """One conversation through a stateless chat API: every call resends the whole history,
    and a tool call is answered by the tool before the model is asked again."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM_PROMPT}]
    for exchange in conversation.exchanges:
        messages.append({"role": "user", "content": exchange.user})
        while True:
            message = ask(messages)
            if not message.tool_calls:
                messages.append({"role": "assistant", "content": message.content})
                break
            messages.append(
                {
                    "role": "assistant",
                    "content": message.content,
                    "tool_calls": [
                        {
                            "id": call.id,
                            "type": "function",
                            "function": {
                                "name": call.function.name,
                                "arguments": call.function.arguments,
                            },
                        }
                        for call in message.tool_calls
                    ],
                }
            )
            for call in message.tool_calls:
                result = lookup_parcel(**json.loads(call.function.arguments))
                messages.append({"role": "tool", "tool_call_id": call.id, "content": result})


def asker(client: Any) -> Ask:
    def ask(messages: list[dict[str, Any]]) -> Any:
        response = client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS)
        return response.choices[0].message

    return ask


def in_turn_span(provider: Any, settings: Settings, conversation: Conversation, ask: Ask) -> Ask:
    """`ask` inside the chatbot's own span for the turn, which names the conversation and the
    user: how an application adds ids that its instrumentation does not know."""
    tracer = provider.get_tracer("parcel-shop-bot")

    def ask_in_turn(messages: list[dict[str, Any]]) -> Any:
        with tracer.start_as_current_span(
            "support turn",
            attributes={
                "gen_ai.conversation.id": conversation_id(settings.run, conversation),
                "user.id": user_id(conversation),
            },
        ):
            return ask(messages)

    return ask_in_turn
