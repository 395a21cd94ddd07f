"""Simulated support chatbot for the compose demo: real OTel SDK spans, fake conversations.

Each conversation is a few chat turns (and sometimes a tool call) on one `gen_ai.conversation.id`,
sent to OTEL_EXPORTER_OTLP_ENDPOINT. A share of conversations goes wrong on purpose (a tool
error, a refund without confirmation) so the dashboard has failures to show.
"""

from __future__ import annotations

import json
import os
import random
import time
import uuid

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

QUESTIONS = [
    "Where is my order {order}?",
    "Can you change the delivery address of {order} to 12 High Street?",
    "I want a refund for {order}, it arrived broken.",
    "My name is Dana Reyes, email dana.reyes@example.com. What is the status of {order}?",
]


def messages(role: str, text: str) -> str:
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}]}])


def conversation(tracer: trace.Tracer, rng: random.Random) -> None:
    conversation_id = str(uuid.uuid4())
    order = f"A-{rng.randint(10000, 99999)}"
    for turn in range(rng.randint(2, 6)):
        question = rng.choice(QUESTIONS).format(order=order)
        with tracer.start_as_current_span("chat gpt-4o-mini") as span:
            span.set_attribute("gen_ai.operation.name", "chat")
            span.set_attribute("gen_ai.provider.name", "openai")
            span.set_attribute("gen_ai.request.model", "gpt-4o-mini")
            span.set_attribute("gen_ai.conversation.id", conversation_id)
            span.set_attribute("user.id", f"user-{rng.randint(1, 500)}")
            span.set_attribute("gen_ai.input.messages", messages("user", question))
            answer = f"Order {order} is on its way (turn {turn})."
            span.set_attribute("gen_ai.output.messages", messages("assistant", answer))
            span.set_attribute("gen_ai.usage.input_tokens", rng.randint(200, 900))
            span.set_attribute("gen_ai.usage.output_tokens", rng.randint(20, 200))
            if rng.random() < 0.2:
                with tracer.start_as_current_span("execute_tool lookup_order") as tool:
                    tool.set_attribute("gen_ai.operation.name", "execute_tool")
                    tool.set_attribute("gen_ai.tool.name", "lookup_order")
                    tool.set_attribute(
                        "gen_ai.tool.call.arguments", json.dumps({"order_id": order})
                    )
                    if rng.random() < 0.3:
                        tool.set_status(trace.Status(trace.StatusCode.ERROR, "timeout"))
        time.sleep(rng.uniform(0.1, 1.0))


def main() -> None:
    service = os.environ.get("OTEL_SERVICE_NAME", "support-bot")
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    # The collector's OTLP token comes from a mounted secret, never from the environment.
    token_file = os.environ.get("OTLP_TOKEN_FILE")
    headers = {}
    if token_file:
        with open(token_file, encoding="utf-8") as handle:
            headers["Authorization"] = f"Bearer {handle.read().strip()}"
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(headers=headers)))
    tracer = provider.get_tracer("turnwatch-demo-chatbot")
    rng = random.Random()
    rate = float(os.environ.get("CONVERSATIONS_PER_SECOND", "2"))
    while True:
        conversation(tracer, rng)
        time.sleep(rng.expovariate(rate))


if __name__ == "__main__":
    main()
