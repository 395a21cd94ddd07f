"""Each dialect's fixture (collector/testdata) posted as OTLP/JSON, and protobuf, to `serve`.

The fixtures are request bodies as exporters send them; every test rebuilds the conversation
from them and checks it turn by turn. Most tests share one server for the module (fixtures use
distinct conversation keys and trace ids); tests that count sessions or compare encodings take
servers of their own.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from google.protobuf import json_format
from google.protobuf.message import Message as ProtoMessage
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from prometheus_client import CollectorRegistry
from turnwatch.collector import otlp_json
from turnwatch.collector.assembler import assemble
from turnwatch.collector.dialects.base import salvage_json
from turnwatch.collector.dialects.genai import parse_messages
from turnwatch.collector.dialects.genai_events import GenAIMessageEventLogDecoder
from turnwatch.collector.metrics import CollectorMetrics
from turnwatch.collector.otlp_common import DecodeLimits
from turnwatch.collector.records import LogView

from tests.conftest import Running, Settled, make_settings, settled, start_service
from tests.otlp_requests import LOOPBACK
from tests.stages import assembling_pipeline
from turnwatch import collector
from turnwatch.schema import Role, Session, TokenUsage, ToolCall, Turn

TESTDATA = Path(collector.__file__).parent / "testdata"
JSON = "application/json"
PROTOBUF = "application/x-protobuf"

SYSTEM = "You are Acme's support agent. Answer briefly."
U1 = "Hi, where is my order 4411?"
A1 = "Your order 4411 is packed and ships tomorrow."
U2 = "Can you send it to my office instead?"
A2 = "Sure - what is the office address?"
U3 = "12 Baker Street, London"
A3 = "Done: order 4411 now goes to 12 Baker Street, London."
ORDER = {"order_id": "4411"}
PACKED = {"status": "packed", "ship_date": "tomorrow"}


def support_shape(call_id: str, arguments: Any = ORDER, result: Any = PACKED) -> list[tuple]:
    """The two-user-turn support conversation most fixtures carry, as `shape` renders it."""
    return [
        (Role.USER, U1, []),
        (Role.ASSISTANT, None, [(call_id, "lookup_order", arguments, result)]),
        (Role.ASSISTANT, A1, []),
        (Role.USER, U2, []),
        (Role.ASSISTANT, A2, []),
    ]


def shape(session: Session) -> list[tuple]:
    return [
        (
            turn.role,
            turn.text,
            [(call.id, call.name, call.arguments, call.result) for call in turn.tool_calls],
        )
        for turn in session.turns
    ]


@pytest.fixture(scope="module")
def server() -> Iterator[Running]:
    handle = start_service(make_settings())
    yield handle
    handle.background.stop()


def post(running: Running, name: str, signal: str = "traces", *, protobuf: bool = False) -> None:
    document = (TESTDATA / name).read_bytes()
    body, content_type = (to_protobuf(document, signal), PROTOBUF) if protobuf else (document, JSON)
    response = LOOPBACK.post(
        f"{running.http_url}/v1/{signal}",
        content=body,
        headers={"content-type": content_type},
        timeout=10,
    )
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith(content_type)
    if not protobuf:
        # No partialSuccess: every span / log record was usable, unknown fields ignored.
        assert response.json() == {}


def rebuilt(running: Running, key: str, *posts: tuple[str, str]) -> Session:
    for name, signal in posts:
        post(running, name, signal)
    return running.sink.session_for(key)


_ID_FIELDS = frozenset({"traceId", "spanId", "parentSpanId"})


def _hex_ids_to_base64(node: Any) -> Any:
    """OTLP/JSON ids are hex; protobuf's JSON mapping (json_format) expects base64 bytes."""
    if isinstance(node, dict):
        return {
            key: base64.b64encode(bytes.fromhex(value)).decode()
            if key in _ID_FIELDS and isinstance(value, str)
            else _hex_ids_to_base64(value)
            for key, value in node.items()
        }
    if isinstance(node, list):
        return [_hex_ids_to_base64(item) for item in node]
    return node


def to_protobuf(document: bytes, signal: str) -> bytes:
    message: ProtoMessage = (
        ExportTraceServiceRequest() if signal == "traces" else ExportLogsServiceRequest()
    )
    parsed = _hex_ids_to_base64(orjson.loads(document))
    json_format.ParseDict(parsed, message, ignore_unknown_fields=True)
    return message.SerializeToString()


def assert_assistant_metadata(session: Session, model: str) -> None:
    for turn in session.turns:
        if turn.role is Role.ASSISTANT:
            assert turn.model == model
            assert turn.usage is not None and turn.usage.output_tokens
            assert turn.latency_ms is not None and turn.latency_ms > 0


# ---------------------------------------------------------------- OTel GenAI v1.37+


def test_genai_json_string_history_resent_on_every_call_appears_once(server):
    session = rebuilt(server, "conv-genai-json-7f3a", ("genai_json_string.json", "traces"))

    assert session.key_source == "gen_ai.conversation.id"
    assert session.service == "support-bot"
    assert session.user_id == "user-4411"
    assert session.system_instructions == [SYSTEM]
    assert len(session.trace_ids) == 3
    assert not session.incomplete, session.incomplete_reasons
    address = {"order_id": "4411", "address": U3}
    assert shape(session) == [
        *support_shape("call_Qm8xZ1"),
        (Role.USER, U3, []),
        # The result comes from the `response` part: this execute_tool span did not record one.
        (Role.ASSISTANT, None, [("call_Vb72Lk", "update_address", address, "address updated")]),
        (Role.ASSISTANT, A3, []),
    ]
    assert [turn.index for turn in session.turns] == list(range(8))
    # The reasoning part of the second answer is not part of its text.
    assert session.turns[2].text == A1
    lookup = session.turns[1].tool_calls[0]
    assert lookup.duration_ms == pytest.approx(190.0)
    assert lookup.started_at is not None and lookup.error is None
    assert session.turns[1].finish_reason == "tool_call"
    assert session.turns[2].finish_reason == "stop"
    assert session.turns[2].usage.input_tokens == 104
    assert session.turns[7].usage.output_tokens == 16
    assert_assistant_metadata(session, "gpt-4o-mini-2024-07-18")
    assert session.provenance.providers == ["openai"]
    assert session.provenance.dialects == ["genai"]


def test_genai_structured_any_values_with_developer_role_and_result_key(server):
    session = rebuilt(server, "conv-genai-structured-19c2", ("genai_structured.json", "traces"))

    assert session.key_source == "gen_ai.conversation.id"
    assert session.service == "support-bot-dotnet"
    assert session.user_id == "customer-88"
    # The `developer` message is the system prompt, kept apart from the turns.
    assert session.system_instructions == [SYSTEM]
    assert Role.SYSTEM not in {turn.role for turn in session.turns}
    arguments = {"order_id": "4411", "include_items": True}
    result = {"status": "packed", "ship_date": "tomorrow", "items": 2}
    assert shape(session) == support_shape("toolu_01A9", arguments, result)
    assert not session.incomplete, session.incomplete_reasons
    assert session.provenance.providers == ["anthropic"]
    assert_assistant_metadata(session, "gpt-4o-mini-2024-07-18")


def test_genai_details_event_logs_give_content_to_spans_without_it(server):
    # The logs pipeline exports first (1 s batches) and the spans later (5 s batches).
    session = rebuilt(
        server,
        "conv-details-5d1e",
        ("genai_details_event_logs.json", "logs"),
        ("genai_details_event_spans.json", "traces"),
    )

    assert session.key_source == "gen_ai.conversation.id"
    assert session.user_id == "user-details"
    assert session.system_instructions == [SYSTEM]
    assert shape(session) == support_shape("call_dE1")
    assert not session.incomplete, session.incomplete_reasons
    assert session.turns[1].tool_calls[0].duration_ms == pytest.approx(180.0)
    # Timing comes from the span, usage from either: the call is one call, not two.
    assert session.turns[2].latency_ms == pytest.approx(700.0)
    assert session.turns[2].usage.input_tokens == 101
    assert_assistant_metadata(session, "gpt-4o-mini-2024-07-18")


# ---------------------------------------------------------------- OTel GenAI v1.28-v1.36


def test_genai_legacy_span_events_with_event_content_attribute(server):
    session = rebuilt(server, "sess-legacy-span-42", ("genai_legacy_span_events.json", "traces"))

    assert session.key_source == "session.id"
    assert session.service == "support-bot-azure"
    assert session.user_id == "enduser-31"
    assert session.system_instructions == [SYSTEM]
    # The first choice says `content: ""` and its resent copy has no content: same message.
    assert shape(session) == support_shape("call_LgS1")
    assert not session.incomplete, session.incomplete_reasons
    assert session.turns[1].finish_reason == "tool_calls"
    assert session.provenance.providers == ["az.ai.inference"]
    assert session.provenance.dialects == ["genai_events"]
    assert_assistant_metadata(session, "gpt-4o-2024-08-06")


def test_genai_legacy_log_events_by_event_name_field_and_attribute(server):
    # Turn 1's records name the event only in the `event.name` attribute (older Python SDK),
    # turn 2's in `eventName`. Logs arrive before the chat spans that carry the key.
    session = rebuilt(
        server,
        "conv-legacy-logs-0b7",
        ("genai_legacy_logs.json", "logs"),
        ("genai_legacy_logs_spans.json", "traces"),
    )

    assert session.key_source == "gen_ai.conversation.id"
    assert session.user_id == "user-legacy"
    assert session.system_instructions == [SYSTEM]
    assert shape(session) == support_shape("call_LgL1")
    assert not session.incomplete, session.incomplete_reasons
    assert [turn.finish_reason for turn in session.turns if turn.role is Role.ASSISTANT] == [
        "tool_calls",
        "stop",
        "stop",
    ]
    # The bare chat spans gave timing and usage; the turns came from the events.
    assert session.provenance.dialects == ["genai_events"]
    assert_assistant_metadata(session, "gpt-4o-mini-2024-07-18")


def test_legacy_log_event_without_captured_content_marks_the_call_incomplete():
    decoder = GenAIMessageEventLogDecoder(["__REDACTED__"])
    record = LogView(
        time_ns=1,
        trace_id="ab" * 16,
        span_id="cd" * 8,
        event_name="gen_ai.user.message",
        body={},
        attributes={"gen_ai.system": "openai"},
        resource={},
        scope_name="opentelemetry.instrumentation.openai_v2",
    )
    observation = decoder.decode(record)
    assert observation is not None
    assert observation.inputs[0].text is None
    assert observation.incomplete_reasons == ["no_content"]

    record.event_name = "gen_ai.system.message"
    observation = decoder.decode(record)
    assert observation is not None
    assert observation.inputs == [] and observation.system_instructions == []

    # Captured but empty is not missing: `content: ""` beside tool calls is a complete message.
    record.event_name = "gen_ai.choice"
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    record.body = {"index": 0, "message": {"content": "", "tool_calls": [call]}}
    observation = decoder.decode(record)
    assert observation is not None
    assert observation.incomplete_reasons == []
    assert observation.outputs[0].text is None
    assert [c.name for c in observation.outputs[0].tool_calls] == ["f"]


def test_genai_empty_text_answer_is_a_turn_without_text():
    reasons: list[str] = []
    messages = parse_messages(
        '[{"role": "assistant", "parts": [{"type": "text", "content": ""}]}]', frozenset(), reasons
    )
    assert [(m.role, m.text) for m in messages] == [("assistant", None)]
    assert reasons == []


def test_genai_one_text_part_messages_keep_every_field_whatever_their_length():
    long_text = "refund " * 20
    raw = [
        {"role": "user", "parts": [{"type": "text", "content": long_text}], "name": "ann"},
        {"role": " Human ", "parts": [{"type": "text", "content": "[REDACTED]"}]},
        {"role": "assistant", "parts": [{"type": "text", "content": " " * 100}]},
        {"role": "model", "content": long_text, "finish_reason": "stop"},
        {"role": ["user"], "parts": [{"type": "text", "content": long_text}]},
    ]
    reasons: list[str] = []
    messages = parse_messages(orjson.dumps(raw).decode(), frozenset({"[REDACTED]"}), reasons)
    assert [(m.role, m.text, m.name, m.finish_reason, m.redacted) for m in messages] == [
        ("user", long_text, "ann", None, False),
        ("user", None, None, None, True),
        ("assistant", None, None, None, False),
        ("assistant", long_text, None, "stop", False),
    ]
    assert reasons == ["unknown_role"]


# ---------------------------------------------------------------- OpenInference, OpenLLMetry


def test_openinference_flattened_messages_session_and_tool_span(server):
    session = rebuilt(server, "sess-oi-9b1", ("openinference.json", "traces"))

    assert session.key_source == "session.id"
    assert session.service == "support-bot-oi"
    assert session.user_id == "oi-user-12"
    assert session.system_instructions == [SYSTEM]
    assert shape(session) == support_shape("call_OI1")
    assert not session.incomplete, session.incomplete_reasons
    # The TOOL span has no call id: it is joined to the call by name within its trace.
    assert session.turns[1].tool_calls[0].duration_ms == pytest.approx(170.0)
    assert session.provenance.dialects == ["openinference"]
    assert_assistant_metadata(session, "gpt-4o-mini-2024-07-18")


def test_openinference_redacted_user_text_marks_turns_and_session(server):
    session = rebuilt(server, "sess-oi-redacted-3", ("openinference_redacted.json", "traces"))

    assert session.incomplete
    assert session.incomplete_reasons == ["redacted_content"]
    assert [(t.role, t.text, t.redacted) for t in session.turns] == [
        (Role.USER, None, True),
        (Role.ASSISTANT, None, False),
        (Role.ASSISTANT, A1, False),
        (Role.USER, None, True),
        (Role.ASSISTANT, A2, False),
    ]
    assert "__REDACTED__" not in session.model_dump_json()
    assert session.turns[1].tool_calls[0].result == PACKED


def test_openllmetry_prompt_completion_attributes_and_association_properties(server):
    session = rebuilt(server, "sess-oll-77", ("openllmetry.json", "traces"))

    assert session.key_source == "traceloop.association.properties.session_id"
    assert session.service == "support-bot-oll"
    assert session.user_id == "oll-user-5"
    assert session.system_instructions == [SYSTEM]
    assert shape(session) == support_shape("call_OL1")
    assert not session.incomplete, session.incomplete_reasons
    assert session.turns[1].finish_reason == "tool_calls"
    assert session.turns[1].tool_calls[0].duration_ms == pytest.approx(170.0)
    # Usage under the pre-v1.28 names gen_ai.usage.prompt_tokens / completion_tokens.
    assert session.turns[2].usage.input_tokens == 100
    assert session.provenance.dialects == ["openllmetry"]
    assert_assistant_metadata(session, "gpt-4o-mini-2024-07-18")


# ---------------------------------------------------------------- encodings


def test_javascript_exporter_json_body(server):
    # Ints as JSON numbers, kind as API kind + 1, empty schemaUrl, links/dropped counts present.
    session = rebuilt(server, "conv-js-a51", ("js_exporter.json", "traces"))

    assert session.key_source == "gen_ai.conversation.id"
    assert session.service == "weather-bot"
    assert session.user_id == "js-user-9"
    assert session.provenance.service_version == "0.9.0"
    assert session.system_instructions == []
    assert shape(session) == [
        (Role.USER, "What's the weather in Paris?", []),
        (Role.ASSISTANT, None, [("call_JS1", "get_weather", {"city": "Paris"}, "rainy, 57F")]),
        (Role.ASSISTANT, "It is rainy in Paris, 57F.", []),
        (Role.USER, "Should I take an umbrella?", []),
        (Role.ASSISTANT, "Yes, take an umbrella.", []),
    ]
    assert not session.incomplete, session.incomplete_reasons
    assert session.turns[2].usage.input_tokens == 72
    assert session.turns[1].tool_calls[0].duration_ms == pytest.approx(240.0)
    assert_assistant_metadata(session, "gpt-4.1-mini-2025-04-14")


@pytest.mark.parametrize(
    ("key", "posts"),
    [
        ("conv-genai-structured-19c2", [("genai_structured.json", "traces")]),
        (
            "conv-legacy-logs-0b7",
            [("genai_legacy_logs.json", "logs"), ("genai_legacy_logs_spans.json", "traces")],
        ),
    ],
    ids=["structured-traces", "legacy-logs"],
)
def test_protobuf_and_json_bodies_rebuild_the_same_session(running, key, posts):
    other = start_service(make_settings())
    try:
        for name, signal in posts:
            post(running, name, signal)
            post(other, name, signal, protobuf=True)
        from_json = running.sink.session_for(key)
        from_protobuf = other.sink.session_for(key)
    finally:
        other.background.stop()
    assert len(from_json.turns) == 5
    # Revisions come from each server's close time, so two servers give two numbers.
    assert from_protobuf.model_dump(exclude={"revision"}) == from_json.model_dump(
        exclude={"revision"}
    )


# ---------------------------------------------------------------- incomplete content


def test_truncated_message_json_is_salvaged_and_marks_the_session(server):
    # A length limit cuts every later call's history at the same place, inside U2.
    session = rebuilt(server, "conv-truncated-e2", ("genai_truncated.json", "traces"))

    assert session.incomplete
    assert session.incomplete_reasons == ["truncated_content"]
    assert [(t.role, t.text, t.truncated) for t in session.turns] == [
        (Role.USER, U1, False),
        (Role.ASSISTANT, "Let me check order 4411 for you.", False),
        (Role.USER, "Can you send it", True),
        (Role.ASSISTANT, A2, False),
        # U3 lay past the cut and is lost; the cut history is not appended a second time.
        (Role.ASSISTANT, A3, False),
    ]


def test_chat_span_without_content_marks_the_session_incomplete(server):
    session = rebuilt(server, "conv-no-content-4c", ("genai_no_content.json", "traces"))

    assert session.incomplete
    assert session.incomplete_reasons == ["no_content"]
    assert shape(session) == [(Role.USER, U1, []), (Role.ASSISTANT, A1, [])]
    assert len(session.trace_ids) == 2


# ---------------------------------------------------------------- conversation identity


def test_key_only_on_root_spans_exported_after_the_chat_spans(running):
    # Request 1: trace A's chat and tool spans, no key. Request 2: trace B's chat span (no key),
    # then both root HTTP spans, which alone carry session.id and user.id.
    post(running, "genai_partial_key_1.json")
    post(running, "genai_partial_key_2.json")

    session = running.sink.session_for("sess-partial-61")
    assert session.key_source == "session.id"
    assert session.user_id == "user-partial"
    assert shape(session) == support_shape("call_PK1")
    assert len(session.trace_ids) == 2
    assert not session.incomplete, session.incomplete_reasons
    # No trace-keyed leftover session with part of the content: one closed, one delivered.
    assert settled(running.ops_url) == Settled(closed=1, delivered=1, dropped=0)
    assert [s.conversation_key for s in running.sink.sessions] == ["sess-partial-61"]


# ---------------------------------------------------------------- salvage_json


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": [1, 2]}', ({"a": [1, 2]}, False)),
        ("[]", ([], False)),
        # Cut inside a string value: the string and every open bracket are closed.
        (
            '[{"role": "user", "parts": [{"type": "text", "content": "Can you se',
            ([{"role": "user", "parts": [{"type": "text", "content": "Can you se"}]}], True),
        ),
        # Cut after a comma, after a key, inside a key: back to the last complete element.
        ("[1, 2, ", ([1, 2], True)),
        ('{"a": 1, "b": ', ({"a": 1}, True)),
        ('{"a": 1, "bc', ({"a": 1}, True)),
        ("[true, fal", ([True], True)),
        ("[1, 2", ([1, 2], True)),
        # Cut right after a backslash, inside a \u escape, after a lone high surrogate.
        ('["a\\', (["a"], True)),
        ('["caf\\u00', (["caf"], True)),
        ('["x", "caf\\u00e9 au l', (["x", "caf\u00e9 au l"], True)),
        ('["hi \\ud83d\\ude0', (["hi "], True)),
        # An escaped backslash followed by text that looks like an escape is plain text.
        ('["a\\\\u00', (["a\\u00"], True)),
        ('["say \\"hi', (['say "hi'], True)),
    ],
)
def test_salvage_json_closes_what_a_length_limit_cut(text, expected):
    assert salvage_json(text) == expected


@pytest.mark.parametrize("text", ["", "not json", "]", '{"a": 1}}', "\\"])
def test_salvage_json_gives_up_on_what_is_not_cut_json(text):
    assert salvage_json(text) == (None, True)


def test_salvage_json_deep_cut_keeps_earlier_messages():
    messages = [
        {"role": "user", "parts": [{"type": "text", "content": f"m{n}"}]} for n in range(30)
    ]
    text = orjson.dumps(messages).decode()
    value, truncated = salvage_json(text[: text.index('"m29"') + 2])
    assert truncated
    assert value[:29] == messages[:29]
    assert value[29]["parts"][0]["content"] == "m"


def test_assembled_turn_fields_are_all_schema_fields():
    """`SessionBuilder` validates turns with extra="ignore" for speed: a misspelled key from the
    assembler would vanish silently, so every key it writes must be a schema field."""
    pipeline, built = assembling_pipeline(
        make_settings().collector, CollectorMetrics(CollectorRegistry())
    )
    limits = DecodeLimits(max_attribute_bytes=1 << 20)
    for path in TESTDATA.glob("*.json"):
        body = path.read_bytes()
        if "resourceLogs" in orjson.loads(body):
            pipeline.accept_logs(otlp_json.decode_logs(body, limits).items)
        else:
            pipeline.accept_spans(otlp_json.decode_traces(body, limits).items)
    pipeline.close_all()
    turns = [
        turn
        for pending in built.pending
        for turn in assemble(pending.closed.state.observations).turns
    ]
    assert len(turns) > 50
    assert any(turn["tool_calls"] and turn.get("usage") for turn in turns)
    for turn in turns:
        assert set(turn) <= set(Turn.model_fields), set(turn) - set(Turn.model_fields)
        assert set(turn.get("usage") or {}) <= set(TokenUsage.model_fields)
        for call in turn["tool_calls"]:
            assert set(call) <= set(ToolCall.model_fields), set(call) - set(ToolCall.model_fields)
