"""The Traceloop SDK (OpenLLMetry's distribution): `Traceloop.init` pointed at turnwatch,
conversation and user as association properties, each user turn a `@workflow` and the tool a
`@tool`, as its docs show. It also exports metrics, to `/v1/metrics`."""

from __future__ import annotations

import json

from common import TOOLS, openai_client
from scenario import (
    CONVERSATIONS,
    MODEL,
    SYSTEM_PROMPT,
    Settings,
    conversation_id,
    lookup_parcel,
    user_id,
)
from traceloop.sdk import Traceloop
from traceloop.sdk.decorators import tool, workflow

settings = Settings.from_environment()
Traceloop.init(
    app_name=settings.service,
    api_endpoint=settings.otlp_endpoint,
    telemetry_enabled=False,
    disable_batch=False,
)
client = openai_client(settings)


@tool(name="lookup_parcel")
def run_tool(label: str) -> str:
    return lookup_parcel(label)


@workflow(name="support_turn")
def answer(messages: list) -> None:
    """One user turn: ask the model, run the tool it asks for, ask again."""
    while True:
        reply = client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS)
        message = reply.choices[0].message
        if not message.tool_calls:
            messages.append({"role": "assistant", "content": message.content})
            return
        messages.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls:
            result = run_tool(**json.loads(call.function.arguments))
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})


for conversation in CONVERSATIONS:
    Traceloop.set_association_properties(
        {
            "session_id": conversation_id(settings.run, conversation),
            "user_id": user_id(conversation),
        }
    )
    history = [{"role": "system", "content": SYSTEM_PROMPT}]
    for exchange in conversation.exchanges:
        history.append({"role": "user", "content": exchange.user})
        answer(history)
