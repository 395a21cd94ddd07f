"""The fast trace decoder (`otlp_proto.decode_traces`) against the reference one.

`decode_traces` reads span attributes from their raw encoding (see otlp_proto.py); the reference
parses with the stock OTLP classes and converts with `trace_request_to_views`. For any body both
must give the same items, in the same attribute order, with the same rejections, or both refuse
it as undecodable. Bodies: random valid requests covering every AnyValue kind, hand-written
non-canonical encodings the stock parser accepts or refuses, and randomly corrupted requests.
"""

from __future__ import annotations

import dataclasses
import random

import pytest
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, ArrayValue, KeyValue, KeyValueList
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status
from turnwatch.collector import otlp_proto, otlp_values
from turnwatch.collector.otlp_common import DecodeLimits, Undecodable
from turnwatch.collector.records import SpanView
from turnwatch.collector.run_bytes import TEXT_HEAD, TEXT_KEY

HEADS = otlp_values.MESSAGE_HEADS

LIMITS = [
    DecodeLimits(),
    DecodeLimits(max_attribute_bytes=5),
    DecodeLimits(max_attribute_bytes=100),
    DecodeLimits(max_attribute_bytes=150),
    DecodeLimits(max_attribute_bytes=20_000),
]


def reference(body: bytes, limits: DecodeLimits):
    request = ExportTraceServiceRequest()
    try:
        request.ParseFromString(body)
    except (DecodeError, RecursionError, ValueError) as exc:
        raise Undecodable("reference refused it") from exc
    return otlp_proto.trace_request_to_views(request, limits)


UNLIMITED = DecodeLimits(max_attribute_bytes=1 << 40, max_values=1 << 40, values_left=1 << 40)


def encodings(view: SpanView) -> dict[str, list[bytes]]:
    """The view's undecoded message attributes by prefix, a resent run's encodings first."""
    held = dict(view.message_attributes)
    if view.resent_run is not None and view.resent_run.head != TEXT_HEAD:
        head = view.resent_run.head.decode()
        held[head] = view.resent_run.items.flat() + held.get(head, [])
    return held


def attributes_as_sent(view: SpanView) -> dict:
    """The view's attributes, GenAI's input text whole where the receiver handed on only what
    followed a known run."""
    attributes = dict(view.attributes)
    if view.resent_run is not None and view.resent_run.head == TEXT_HEAD:
        attributes[TEXT_KEY] = view.resent_run.items.text()[:-1] + attributes[TEXT_KEY]
    return attributes


def comparable(view: SpanView) -> SpanView:
    """The view with its message attributes (the fast decoder leaves them undecoded in
    `message_attributes`) decoded, apart from the others, ordered by key."""
    sent = attributes_as_sent(view)
    messages = {key: value for key, value in sent.items() if key.startswith(HEADS)}
    for raws in encodings(view).values():
        messages.update(otlp_values.raw_attributes(raws, UNLIMITED))
    others = {key: value for key, value in sent.items() if key not in messages}
    return dataclasses.replace(
        view,
        attributes={**others, **dict(sorted(messages.items()))},
        message_attributes={},
        message_run=None,
        resent_run=None,
    )


def outcome(decode, body: bytes, limits: DecodeLimits) -> tuple:
    try:
        result = decode(body, limits)
    except Undecodable:
        return ("undecodable",)
    # repr compares NaN doubles equal and keeps the attribute order in the comparison.
    items = [comparable(view) for view in result.items]
    return ("ok", repr(items), result.rejected, dict(result.rejection_reasons))


def assert_same(body: bytes, limits: DecodeLimits) -> None:
    assert outcome(otlp_proto.decode_traces, body, limits) == outcome(reference, body, limits)


def random_value(rng: random.Random, depth: int = 0) -> AnyValue:
    kind = rng.randrange(10 if depth < 18 else 7)
    if kind == 0:
        return AnyValue(string_value="")
    if kind == 1:
        return AnyValue(
            string_value=rng.choice(
                ["x", "héllo", "日本語", "a" * rng.randrange(1, 300), "é" * rng.randrange(1, 200)]
            )
        )
    if kind == 2:
        return AnyValue(int_value=rng.choice([0, 1, -1, 127, 128, 2**31, -(2**63), 2**63 - 1]))
    if kind == 3:
        return AnyValue(bool_value=rng.random() < 0.5)
    if kind == 4:
        return AnyValue(double_value=rng.choice([0.0, 1.5, -2.25, float("inf"), float("nan")]))
    if kind == 5:
        return AnyValue(bytes_value=rng.randbytes(rng.randrange(0, 200)))
    if kind == 6:
        return AnyValue()
    if kind in (7, 8):
        values = [random_value(rng, depth + 1) for _ in range(rng.randrange(3))]
        return AnyValue(array_value=ArrayValue(values=values))
    pairs = [
        KeyValue(key=rng.choice("abc"), value=random_value(rng, depth + 1))
        for _ in range(rng.randrange(3))
    ]
    return AnyValue(kvlist_value=KeyValueList(values=pairs))


def random_pair(rng: random.Random) -> KeyValue:
    key = rng.choice(
        [
            *("k", "gen_ai.x", "", "ключ", "k" * 130, "dup"),
            *("llm.input_messages.0.message.content", "gen_ai.prompt.1.role"),
            *("llm.output_messages.0.message.role", "gen_ai.completion.0.ключ"),
            "llm.input_messages." + "k" * 120,
        ]
    )
    return KeyValue(key=key, value=random_value(rng))


def random_span(rng: random.Random) -> Span:
    odd = rng.random() < 0.2
    span = Span(
        trace_id=rng.choice([bytes(16), b"", rng.randbytes(15)]) if odd else rng.randbytes(16),
        span_id=rng.choice([bytes(8), b"", rng.randbytes(9)]) if odd else rng.randbytes(8),
        parent_span_id=rng.choice([b"", rng.randbytes(8), bytes(8), rng.randbytes(3)]),
        name=rng.choice(["", "chat", "ü"]),
        kind=rng.randrange(6),
        start_time_unix_nano=rng.randrange(2**64),
        end_time_unix_nano=rng.randrange(2**64),
        attributes=[random_pair(rng) for _ in range(rng.randrange(10))],
        dropped_attributes_count=rng.randrange(3),
    )
    if rng.random() < 0.5:
        span.status.CopyFrom(Status(code=rng.randrange(4), message=rng.choice(["", "boom"])))
    for _ in range(rng.randrange(3)):
        event = span.events.add(name=rng.choice(["e", ""]), time_unix_nano=rng.randrange(2**64))
        event.attributes.extend(random_pair(rng) for _ in range(rng.randrange(4)))
    return span


def random_body(rng: random.Random) -> bytes:
    request = ExportTraceServiceRequest()
    for _ in range(rng.randrange(1, 3)):
        resource_spans = request.resource_spans.add()
        resource_spans.resource.attributes.extend(random_pair(rng) for _ in range(3))
        for _ in range(rng.randrange(1, 3)):
            scope = resource_spans.scope_spans.add()
            scope.scope.name = rng.choice(["", "s"])
            scope.spans.extend(random_span(rng) for _ in range(rng.randrange(1, 5)))
    return request.SerializeToString()


@pytest.mark.parametrize("seed", range(4))
def test_random_valid_requests_decode_as_the_reference_does(seed):
    rng = random.Random(seed)
    for _ in range(150):
        body = random_body(rng)
        for limits in rng.sample(LIMITS, 2):
            assert_same(body, limits)


varint = otlp_values.encode_varint


def body_with_raw_attributes(*raw_pairs: bytes) -> bytes:
    """A request with one span whose attribute fields hold exactly these KeyValue encodings."""
    span = Span(trace_id=b"\x01" * 16, span_id=b"\x02" * 8).SerializeToString()
    for raw in raw_pairs:
        span += b"\x4a" + varint(len(raw)) + raw  # field 9 (attributes), length-delimited
    scope_spans = b"\x12" + varint(len(span)) + span
    resource_spans = b"\x12" + varint(len(scope_spans)) + scope_spans
    return b"\x0a" + varint(len(resource_spans)) + resource_spans


TEXT = b"x" * 300
LONG = b"\x12" + varint(len(TEXT) + 3) + b"\x0a" + varint(len(TEXT)) + TEXT
NON_CANONICAL = {
    "empty pair": b"",
    "no value": b"\x0a\x01k",
    "value before key": b"\x12\x03\x0a\x01v\x0a\x01k",
    "value sent twice, merged": b"\x0a\x01k\x12\x03\x0a\x01v\x12\x02\x18\x05",
    "two oneof members, last wins": b"\x0a\x01k\x12\x05\x0a\x01v\x18\x05",
    "key sent twice": b"\x0a\x01k\x12\x03\x0a\x01v\x0a\x01j",
    "non-minimal length varint": b"\x0a\x01k\x12\x04\x0a\x81\x00v",
    "long text": b"\x0a\x01k" + LONG,
    "long text, non-minimal length": b"\x0a\x01k\x12"
    + varint(len(TEXT) + 4)
    + b"\x0a\xac\x82\x00"
    + TEXT,
    "unknown field in the pair": b"\x0a\x01k\x28\x01\x12\x03\x0a\x01v",
    "bad UTF-8 value": b"\x0a\x01k\x12\x03\x0a\x01\xff",
    "bad UTF-8 key": b"\x0a\x01\xff\x12\x03\x0a\x01v",
    "bad UTF-8 in long text": b"\x0a\x01k" + LONG[:-1] + b"\xff",
    "truncated key": b"\x0a\x05k",
    "truncated value": b"\x0a\x01k\x12\x7f\x0a",
    "truncated varint": b"\x0a\x01k\x12\x02\x18\xff",
    "ten-byte negative int": b"\x0a\x01k\x12\x0b\x18" + b"\xff" * 9 + b"\x01",
    "double": b"\x0a\x01k\x12\x09\x21" + b"\x00" * 8,
    "key longer than 128 bytes": b"\x0a\x81\x01" + b"k" * 129 + LONG,
}


@pytest.mark.parametrize("name", sorted(NON_CANONICAL))
def test_non_canonical_encodings_decode_as_the_reference_does(name):
    body = body_with_raw_attributes(NON_CANONICAL[name], b"\x0a\x01z\x12\x03\x0a\x01v")
    for limits in LIMITS:
        assert_same(body, limits)


@pytest.mark.slow  # a long run: 1,500 bodies
def test_corrupted_requests_are_refused_or_decoded_as_the_reference_does():
    rng = random.Random(2)
    for _ in range(1500):
        body = bytearray(random_body(rng))
        for _ in range(rng.randrange(1, 4)):
            body[rng.randrange(len(body))] = rng.randrange(256)
        assert_same(bytes(body), rng.choice(LIMITS))


def test_repeated_short_attributes_come_from_the_cache_unchanged():
    """The second request hits the cache of short encodings: same result as the first."""
    rng = random.Random(5)
    body = random_body(rng)
    first = outcome(otlp_proto.decode_traces, body, LIMITS[0])
    assert (
        outcome(otlp_proto.decode_traces, body, LIMITS[0])
        == first
        == outcome(reference, body, LIMITS[0])
    )


def test_the_cache_keeps_call_descriptions_but_no_content_or_ids():
    """The cache outlives sessions: short message text and user ids must never be kept in it."""
    span = Span(
        trace_id=b"\x03" * 16,
        span_id=b"\x04" * 8,
        attributes=[
            KeyValue(key="gen_ai.request.model", value=AnyValue(string_value="cache-model-x")),
            KeyValue(key="gen_ai.usage.input_tokens", value=AnyValue(int_value=4242)),
            KeyValue(key="user.id", value=AnyValue(string_value="alice@example.com")),
            KeyValue(key="gen_ai.input.messages", value=AnyValue(string_value='"hi, I am Bob"')),
        ],
    )
    request = ExportTraceServiceRequest()
    request.resource_spans.add().scope_spans.add().spans.append(span)
    otlp_values._KV_CACHE.clear()  # a nearly full cache would be cleared mid-request
    [view] = otlp_proto.decode_traces(request.SerializeToString(), LIMITS[0]).items
    assert view.attributes["user.id"] == "alice@example.com"
    cached = set(otlp_values._KV_CACHE.values())
    assert ("gen_ai.request.model", "cache-model-x") in cached
    assert ("gen_ai.usage.input_tokens", 4242) in cached
    assert not {pair for pair in cached if pair[0] in ("user.id", "gen_ai.input.messages")}


MESSAGE_KEY = b"llm.input_messages.0.message.content"


@pytest.mark.parametrize("name", sorted(NON_CANONICAL))
def test_message_attributes_left_undecoded_are_checked_as_the_reference_decodes(name):
    """Flattened message attributes are checked but kept as their encodings: the same
    rejections and 400s, and the same values once decoded."""
    raw = NON_CANONICAL[name].replace(
        b"\x0a\x01k", b"\x0a" + varint(len(MESSAGE_KEY)) + MESSAGE_KEY
    )
    body = body_with_raw_attributes(raw, b"\x0a\x01z\x12\x03\x0a\x01v")
    for limits in LIMITS:
        assert_same(body, limits)


def test_message_attributes_are_kept_as_their_encodings_by_prefix():
    pairs = [
        KeyValue(key="llm.input_messages.0.message.content", value=AnyValue(string_value="hi")),
        KeyValue(key="gen_ai.prompt.0.content", value=AnyValue(string_value="hello")),
        KeyValue(key="llm.input_messages.1.message.role", value=AnyValue(string_value="user")),
        KeyValue(key="llm.model_name", value=AnyValue(string_value="m")),
    ]
    body = body_with_raw_attributes(*[pair.SerializeToString() for pair in pairs])
    [view] = otlp_proto.decode_traces(body, LIMITS[0]).items
    assert view.attributes == {"llm.model_name": "m"}
    assert view.message_attributes == {
        "llm.input_messages.": [pairs[0].SerializeToString(), pairs[2].SerializeToString()],
        "gen_ai.prompt.": [pairs[1].SerializeToString()],
    }
