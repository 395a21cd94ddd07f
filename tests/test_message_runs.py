"""Resent history recognised in the request bytes (collector/message_runs.py).

A flattened call's input attributes that begin with a run the receiver remembers from an earlier
span are not parsed or checked again: the span is parsed without them and their encodings are
the run's objects. What is asserted: whatever the history (extended, edited, cut to a window,
attributes reordered, an undecodable or oversized attribute after a known run), every span
decodes to what the stock decoder gives, with the same rejections and 400s; a run is used only
where the input really begins with it; and the cache holds nothing once nobody holds the spans.
"""

from __future__ import annotations

import gc
import itertools
import random

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from turnwatch.collector import otlp_proto
from turnwatch.collector.otlp_common import DecodeLimits
from turnwatch.collector.otlp_values import encode_varint
from turnwatch.collector.records import SpanView
from turnwatch.collector.run_bytes import (
    KNOWN_RUNS,
    TEXT_KEY,
    chunks_start,
    extended_chunks,
    longest_start,
)

from tests.conversations import call_attributes, protobuf_request, span, texts
from tests.test_otlp_fast_decode import (
    assert_same,
    attributes_as_sent,
    encodings,
    outcome,
    reference,
)

FLATTENED = ("openinference", "openllmetry")
HEAD = {"openinference": "llm.input_messages.", "openllmetry": "gen_ai.prompt."}
LIMITS = DecodeLimits(max_attribute_bytes=1 << 20)


def call(dialect: str, conversation: str, number: int, history: list[tuple[str, str]]) -> SpanView:
    answer = ("assistant", f"{conversation} answer {number} " + "x" * 400)
    return span(conversation, number, call_attributes(dialect, history, answer))


def decoded(views: list[SpanView], limits: DecodeLimits = LIMITS) -> list[SpanView]:
    """Each span in a request of its own, in order (runs remembered from the earlier ones)."""
    body = [protobuf_request([view]) for view in views]
    out = []
    for request in body:
        assert_same(request, limits)  # what the stock decoder gives, before and after
        out.extend(otlp_proto.decode_traces(request, limits).items)
    return out


def shared(earlier: SpanView, later: SpanView, head: str) -> int:
    """How many of `later`'s leading input encodings are `earlier`'s very objects."""
    count = 0
    for first, second in zip(encodings(earlier)[head], encodings(later)[head], strict=False):
        if first is not second:
            break
        count += 1
    return count


@pytest.mark.parametrize("dialect", FLATTENED)
def test_an_extended_history_is_recognised_and_decodes_as_the_stock_decoder(dialect):
    messages = texts(f"runs-{dialect}", 40)
    views = decoded(
        [call(dialect, f"runs-{dialect}", n, messages[: 2 * n + 1]) for n in range(1, 20)]
    )
    head = HEAD[dialect]
    for earlier, later in itertools.pairwise(views[10:]):  # spans past 8 KiB
        # The earlier call's whole input (role and content of each message) is reused as is.
        assert shared(earlier, later, head) == len(encodings(earlier)[head])
        # The later span holds only what it added; the run starts from the earlier one's.
        assert later.resent_run is earlier.message_run
        assert (
            later.message_attributes[head]
            == encodings(later)[head][len(encodings(earlier)[head]) :]
        )
        assert later.message_run.items.before is earlier.message_run.items
        assert later.message_run.items.flat() == encodings(later)[head]


@pytest.mark.parametrize("dialect", FLATTENED)
def test_an_edited_history_is_parsed_again(dialect):
    messages = texts(f"edit-{dialect}", 40)
    first = call(dialect, f"edit-{dialect}", 1, messages[:21])
    edited = list(messages[:23])
    edited[10] = (edited[10][0], edited[10][1] + " (edited)")
    second = call(dialect, f"edit-{dialect}", 2, edited)
    views = decoded([first, second])
    head = HEAD[dialect]
    # Messages 0-9 (their two attributes each) are the same bytes, but the run is the whole of
    # the first call's input: the second does not begin with it, so nothing is reused.
    assert shared(views[0], views[1], head) == 0
    assert views[1].resent_run is None
    assert views[1].message_run.items.flat() == views[1].message_attributes[head]


@pytest.mark.parametrize("dialect", FLATTENED)
def test_a_history_cut_to_a_window_is_parsed_again(dialect):
    messages = texts(f"window-{dialect}", 40)
    views = decoded(
        [
            call(dialect, f"window-{dialect}", 1, messages[:21]),
            call(dialect, f"window-{dialect}", 2, messages[2:23]),  # the oldest turn left out
            call(dialect, f"window-{dialect}", 3, messages[2:25]),  # extends the window
        ]
    )
    head = HEAD[dialect]
    assert shared(views[0], views[1], head) == 0
    # A window's indexes start again at 0: its encodings differ from the uncut history's.
    assert shared(views[1], views[2], head) == len(encodings(views[1])[head])


@pytest.mark.parametrize("dialect", FLATTENED)
def test_reordered_attributes_decode_as_the_stock_decoder(dialect):
    messages = texts(f"order-{dialect}", 40)
    first = call(dialect, f"order-{dialect}", 1, messages[:21])
    second = call(dialect, f"order-{dialect}", 2, messages[:23])
    # The same attributes in another order: each message's content before its role.
    second.attributes = dict(sorted(second.attributes.items(), reverse=True))
    third = call(dialect, f"order-{dialect}", 3, messages[:25])
    views = decoded([first, second, third])
    head = HEAD[dialect]
    assert shared(views[0], views[1], head) == 0
    assert shared(views[1], views[2], head) == 0
    assert shared(views[0], views[2], head) == len(encodings(views[0])[head])


def _with_attribute(view: SpanView, raw: bytes) -> bytes:
    """The view's request with one more attribute (a raw KeyValue) at the end of its span."""
    request = ExportTraceServiceRequest.FromString(protobuf_request([view]))
    scope_spans = request.resource_spans[0].scope_spans[0]
    span_bytes = scope_spans.spans[0].SerializeToString() + _field(9, raw)
    scope_spans.ClearField("spans")
    scope = scope_spans.SerializeToString() + _field(2, span_bytes)
    request.resource_spans[0].ClearField("scope_spans")
    return _field(1, request.resource_spans[0].SerializeToString() + _field(2, scope))


def _field(number: int, value: bytes) -> bytes:
    return bytes([number << 3 | 2]) + encode_varint(len(value)) + value


@pytest.mark.parametrize("dialect", FLATTENED)
def test_bad_attributes_after_a_known_run_are_refused_as_the_stock_decoder(dialect):
    messages = texts(f"bad-{dialect}", 40)
    first = call(dialect, f"bad-{dialect}", 1, messages[:21])
    second = call(dialect, f"bad-{dialect}", 2, messages[:23])
    [held] = decoded([first])
    head = HEAD[dialect]
    key = f"{head}23.content".encode()
    [good] = otlp_proto.decode_traces(protobuf_request([second]), LIMITS).items
    assert shared(held, good, head) == len(encodings(held)[head])  # the run is used
    bad_utf8 = b"\x0a" + bytes([len(key)]) + key + b"\x12\x04\x0a\x02\xc3\x28"
    undecodable = _with_attribute(second, bad_utf8)
    assert outcome(otlp_proto.decode_traces, undecodable, LIMITS) == ("undecodable",)
    assert_same(undecodable, LIMITS)
    big = KeyValue(key=key.decode(), value=AnyValue(string_value="y" * 2000)).SerializeToString()
    limits = DecodeLimits(max_attribute_bytes=1500)
    [held_small] = decoded([first], limits)  # a run checked under this limit
    oversized = _with_attribute(second, big)
    result = otlp_proto.decode_traces(oversized, limits)
    assert (result.rejected, result.rejection_reasons) == (1, {"attribute_too_large": 1})
    assert_same(oversized, limits)
    truncated = protobuf_request([second])[:-7]
    assert outcome(otlp_proto.decode_traces, truncated, LIMITS) == ("undecodable",)
    assert outcome(reference, truncated, LIMITS) == ("undecodable",)
    assert held.message_run is not None and held_small.message_run is not None


@pytest.mark.parametrize("dialect", FLATTENED)
@pytest.mark.parametrize("edited", [0, 17, 38])
def test_a_history_edited_in_any_chunk_of_a_long_run_is_parsed_past_the_edit(dialect, edited):
    """A run of many calls is several chunks; an edit in the first, a middle or the very last
    message of the previous call's input (its last chunk) is found by the comparison, and the
    span decodes as the stock decoder has it (`decoded` checks)."""
    messages = texts(f"chunks-{dialect}", 44)
    earlier = [call(dialect, f"chunks-{dialect}", n, messages[: 2 * n + 1]) for n in range(5, 20)]
    history = list(messages[:41])
    role, text = history[edited]
    history[edited] = (role, text[:-1] + ("y" if text[-1] != "y" else "z"))
    views = decoded([*earlier, call(dialect, f"chunks-{dialect}", 20, history)])
    previous, last = views[-2], views[-1]
    assert len(previous.message_run.chunks) > 1
    assert last.resent_run is not previous.message_run
    # Whatever it begins with ends before the edited message (two attributes a message).
    assert last.resent_run is None or last.resent_run.items.count <= 2 * edited


class _Run:
    def __init__(self, *chunks: bytes) -> None:
        self.chunks = chunks
        self.size = sum(len(chunk) for chunk in chunks)


def test_chunks_are_compared_whole_and_within_the_end():
    body = b"head:" + b"a" * 300 + b"b" * 100 + b"c" * 20 + b":tail"
    chunks = (b"a" * 300, b"b" * 100, b"c" * 20)
    assert chunks_start(chunks, body, 5, len(body))
    assert not chunks_start(chunks, body, 5, 5 + 419)  # the last byte past the end
    for at in (5, 5 + 150, 5 + 299, 5 + 300, 5 + 399, 5 + 419):  # in each chunk, at its edges
        changed = body[:at] + b"x" + body[at + 1 :]
        assert not chunks_start(chunks, changed, 5, len(changed)), at


def test_the_longest_run_the_bytes_begin_with_is_found():
    body = b"a" * 300 + b"b" * 100 + b"c" * 20
    short, whole, longer = _Run(b"a" * 300), _Run(b"a" * 300, b"b" * 100), _Run(body + b"d")
    wrong = _Run(b"a" * 300, b"b" * 99 + b"x")
    assert longest_start([short, wrong, whole, longer], body, 0, len(body)) is whole
    assert longest_start([wrong, longer], body, 0, len(body)) is None
    assert longest_start([short, whole], body, 0, 350) is short  # `whole` reaches past the end


def test_extended_chunks_keep_the_bytes_and_halve_in_size():
    chunks: tuple[bytes, ...] = ()
    whole = b""
    for number in range(200):
        added = bytes([65 + number % 26]) * (50 + number % 7)
        chunks, whole = extended_chunks(chunks, added), whole + added
        assert b"".join(chunks) == whole
        assert all(len(a) >= 2 * len(b) for a, b in itertools.pairwise(chunks))
    assert len(chunks) <= 10


def test_a_run_checked_under_a_larger_limit_is_not_used_under_a_smaller_one():
    messages = texts("limits", 40, length=700)
    first = call("openinference", "limits", 1, messages[:21])
    second = call("openinference", "limits", 2, messages[:23])
    [held] = decoded([first])
    small = DecodeLimits(max_attribute_bytes=600)
    result = otlp_proto.decode_traces(protobuf_request([second]), small)
    assert (result.rejected, result.rejection_reasons) == (1, {"attribute_too_large": 1})
    assert held.message_run is not None


def test_the_cache_holds_nothing_once_the_spans_are_gone():
    gc.collect()
    before = len(KNOWN_RUNS)
    messages = texts("gone", 40)
    views = decoded([call("openinference", "gone", n, messages[: 2 * n + 1]) for n in range(5, 9)])
    assert len(KNOWN_RUNS) > before
    del views
    gc.collect()
    assert len(KNOWN_RUNS) == before


def test_corrupted_spans_after_a_known_run_decode_as_the_stock_decoder():
    messages = texts("corrupt", 40)
    first = call("openllmetry", "corrupt", 1, messages[:21])
    [held] = decoded([first])
    body = protobuf_request([call("openllmetry", "corrupt", 2, messages[:23])])
    assert_corruptions_decode_as_stock(body, random.Random(7))
    assert held.message_run is not None


def assert_corruptions_decode_as_stock(body: bytes, rng: random.Random) -> None:
    """150 copies of `body` with one to three bytes changed decode as the stock decoder."""
    outcomes = set()
    for _ in range(150):
        corrupted = bytearray(body)
        for _ in range(rng.randint(1, 3)):
            corrupted[rng.randrange(len(body))] = rng.randrange(256)
        assert_same(bytes(corrupted), LIMITS)
        outcomes.add(outcome(otlp_proto.decode_traces, bytes(corrupted), LIMITS)[0])
    assert outcomes == {"ok", "undecodable"}  # both kinds of body were tried


# --- GenAI: one JSON string that each resent call extends ----------------------------------


def genai_calls(conversation: str, count: int, length: int = 500) -> list[SpanView]:
    messages = texts(conversation, 2 * count + 2, length=length)
    return [call("genai", conversation, n, messages[: 2 * n + 1]) for n in range(count)]


def test_a_resent_genai_text_is_recognised_and_decodes_as_the_stock_decoder():
    sent = genai_calls("text-runs", 20)
    views = decoded(sent)
    recognised = [view for view in views if view.resent_run is not None]
    assert len(recognised) >= 10  # every span past 8 KiB after the first such
    for earlier, later in itertools.pairwise(views):
        if later.resent_run is None:
            continue
        assert later.resent_run is earlier.message_run
        # The span holds only what follows the earlier call's text (its closing bracket, gone).
        rest = later.attributes[TEXT_KEY]
        assert rest.startswith(", {") and rest.endswith("]")
        assert attributes_as_sent(later)[TEXT_KEY] == sent[views.index(later)].attributes[TEXT_KEY]
        assert later.message_run.items.before is earlier.message_run.items
        assert later.message_run.items.text() == attributes_as_sent(later)[TEXT_KEY]


def test_an_edited_genai_text_is_parsed_again():
    first, second = genai_calls("text-edit", 12)[10:12]
    text = second.attributes[TEXT_KEY]
    second.attributes[TEXT_KEY] = text.replace("text-edit/3 ", "text-edit/3 (edited) ", 1)
    views = decoded([first, second])
    assert views[0].message_run is not None
    assert views[1].resent_run is None
    assert views[1].attributes[TEXT_KEY] == second.attributes[TEXT_KEY]


def test_a_genai_text_cut_short_is_not_extended():
    first, second, third = genai_calls("text-cut", 13)[10:13]
    second.attributes[TEXT_KEY] = second.attributes[TEXT_KEY][:-1]  # no closing bracket
    views = decoded([first, second, third])
    assert views[1].resent_run is views[0].message_run  # it begins with the first text
    assert views[1].message_run is None  # but nothing can extend it
    assert views[2].resent_run is views[0].message_run


def test_bad_genai_text_after_a_known_run_is_refused_as_the_stock_decoder():
    first, second = genai_calls("text-bad", 12, length=700)[10:12]
    [held] = decoded([first])
    body = protobuf_request([second])
    [good] = otlp_proto.decode_traces(body, LIMITS).items
    assert good.resent_run is held.message_run  # what follows is checked on its own
    marker = b"text-bad/22"  # the newest question, past the known run
    at = body.index(marker)
    undecodable = body[:at] + b"\xff" + body[at + 1 :]
    assert outcome(otlp_proto.decode_traces, undecodable, LIMITS) == ("undecodable",)
    assert_same(undecodable, LIMITS)
    # A limit the first text passes and the second does not: the run's characters count.
    limit = len(first.attributes[TEXT_KEY]) + 100
    limits = DecodeLimits(max_attribute_bytes=limit)
    [held_limited] = decoded([first], limits)
    result = otlp_proto.decode_traces(body, limits)
    assert (result.rejected, result.rejection_reasons) == (1, {"attribute_too_large": 1})
    assert_same(body, limits)
    assert held.message_run is not None and held_limited.message_run is not None


def test_corrupted_genai_spans_after_a_known_run_decode_as_the_stock_decoder():
    first, second = genai_calls("text-corrupt", 12)[10:12]
    [held] = decoded([first])
    body = protobuf_request([second])
    assert_corruptions_decode_as_stock(body, random.Random(11))
    assert held.message_run is not None
