"""Long chat conversations as each dialect's instrumentation emits them, history resent or not.

Stateless chat APIs resend the whole history on every call, so an instrumented chat span's input
holds every earlier message; delta-style clients send only the new one. `conversation_spans`
builds either shape in the GenAI (JSON string or structured), OpenInference and OpenLLMetry
dialects, as decoded `SpanView`s; `texts` are distinct per conversation and turn, so nothing
repeats across conversations. Used by the resent-history tests, the memory accounting test and
the benchmarks.
"""

from __future__ import annotations

import hashlib
import json
import random
from typing import Any

from opentelemetry.proto.trace.v1.trace_pb2 import Span
from turnwatch.collector.otlp_common import DecodeLimits
from turnwatch.collector.otlp_proto import decode_traces
from turnwatch.collector.records import SpanView

from tests.otlp_requests import key_values, trace_request

DIALECTS = ("genai", "genai_structured", "openinference", "openllmetry")
WORDS = [
    *("order", "refund", "shipping", "address", "parcel", "invoice", "account", "billing"),
    *("delivery", "tracking", "courier", "warehouse", "return", "label", "payment", "card"),
    *("receipt", "discount", "voucher", "basket", "checkout"),
]

Message = tuple[str, str]  # (role, text)


def texts(conversation: str, turns: int, length: int = 500) -> list[Message]:
    """`turns` alternating user and assistant messages of about `length` characters."""
    rng = random.Random(conversation)
    messages = []
    for turn in range(turns):
        words = [f"{conversation}/{turn}"]
        while sum(len(word) + 1 for word in words) < length:
            words.append(rng.choice(WORDS))
        messages.append(("user" if turn % 2 == 0 else "assistant", " ".join(words)))
    return messages


def _genai_message(role: str, text: str) -> dict[str, Any]:
    return {"role": role, "parts": [{"type": "text", "content": text}]}


def genai_attributes(
    inputs: list[Message], answer: Message, structured: bool = False
) -> dict[str, Any]:
    history = [_genai_message(role, text) for role, text in inputs]
    output = [{**_genai_message(*answer), "finish_reason": "stop"}]
    return {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-4o-mini",
        "gen_ai.input.messages": history if structured else json.dumps(history),
        "gen_ai.output.messages": output if structured else json.dumps(output),
    }


def openinference_attributes(inputs: list[Message], answer: Message) -> dict[str, Any]:
    attributes: dict[str, Any] = {
        "openinference.span.kind": "LLM",
        "llm.provider": "openai",
        "llm.model_name": "gpt-4o-mini",
    }
    for index, (role, text) in enumerate(inputs):
        attributes[f"llm.input_messages.{index}.message.role"] = role
        attributes[f"llm.input_messages.{index}.message.content"] = text
    attributes["llm.output_messages.0.message.role"] = answer[0]
    attributes["llm.output_messages.0.message.content"] = answer[1]
    return attributes


def openllmetry_attributes(inputs: list[Message], answer: Message) -> dict[str, Any]:
    attributes: dict[str, Any] = {"gen_ai.system": "openai", "gen_ai.request.model": "gpt-4o-mini"}
    for index, (role, text) in enumerate(inputs):
        attributes[f"gen_ai.prompt.{index}.role"] = role
        attributes[f"gen_ai.prompt.{index}.content"] = text
    attributes["gen_ai.completion.0.role"] = answer[0]
    attributes["gen_ai.completion.0.content"] = answer[1]
    attributes["gen_ai.completion.0.finish_reason"] = "stop"
    return attributes


def call_attributes(dialect: str, inputs: list[Message], answer: Message) -> dict[str, Any]:
    if dialect == "openinference":
        return openinference_attributes(inputs, answer)
    if dialect == "openllmetry":
        return openllmetry_attributes(inputs, answer)
    return genai_attributes(inputs, answer, structured=dialect == "genai_structured")


def _hex(seed: str, length: int) -> str:
    return hashlib.sha256(seed.encode()).hexdigest()[:length]


def span(conversation: str, number: int, attributes: dict[str, Any]) -> SpanView:
    start = 1_700_000_000_000_000_000 + number * 2_000_000_000
    return SpanView(
        trace_id=_hex(f"trace:{conversation}:{number}", 32),
        span_id=_hex(f"span:{conversation}:{number}", 16),
        parent_span_id="",
        name="chat gpt-4o-mini",
        kind=3,
        start_ns=start,
        end_ns=start + 900_000_000,
        attributes={**attributes, "session.id": conversation},
        events=[],
        status_code=0,
        resource={"service.name": "long-chat-bot"},
        scope_name="tests.conversations",
    )


def history_for(messages: list[Message], call: int, resent: bool) -> list[Message]:
    """What call `call` (0-based) sends: every earlier message, or only the new user message."""
    return messages[: 2 * call + 1] if resent else [messages[2 * call]]


def conversation_spans(
    dialect: str, conversation: str, calls: int, resent: bool, length: int = 500
) -> list[SpanView]:
    messages = texts(conversation, 2 * calls, length)
    return [
        span(
            conversation,
            call,
            call_attributes(dialect, history_for(messages, call, resent), messages[2 * call + 1]),
        )
        for call in range(calls)
    ]


def protobuf_request(spans: list[SpanView]) -> bytes:
    """The spans as one OTLP/protobuf trace request (one resource, one scope)."""
    request = trace_request(
        [
            Span(
                trace_id=bytes.fromhex(view.trace_id),
                span_id=bytes.fromhex(view.span_id),
                name=view.name,
                kind=view.kind,
                start_time_unix_nano=view.start_ns,
                end_time_unix_nano=view.end_ns,
                attributes=key_values(view.attributes),
            )
            for view in spans
        ],
        service=spans[0].resource["service.name"] if spans else "long-chat-bot",
    )
    request.resource_spans[0].scope_spans[0].scope.name = "tests.conversations"
    return request.SerializeToString()


def received(spans: list[SpanView]) -> list[SpanView]:
    """The spans as the receiver hands them on: encoded to OTLP/protobuf and decoded again, so
    every value is a fresh object (nothing shared that a real request would not share)."""
    return decode_traces(protobuf_request(spans), DecodeLimits(max_attribute_bytes=1 << 20)).items
