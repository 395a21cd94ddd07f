"""Resent history in the distributed layout: a sessionizer member keeps only what each call adds.

Routing collectors seal every model call with its whole input (they see a conversation's calls
round-robin, so none knows what the member holds), and the member recognises the extension by
equality of the parsed messages (`resent_history.ParsedContent`). What is asserted, for every
dialect that resends, with calls spread round-robin over three routing collectors: a long
conversation holds on its member what the same turns sent as deltas hold (plus each previous
answer once more and the last call's list of the whole input), in exact structure; an edited or
reordered history is kept whole where it does not extend; and every session is the one an
embedded collector builds from the same spans.
"""

from __future__ import annotations

import asyncio
import itertools
import sys

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from turnwatch.collector.dialects.base import messages_size
from turnwatch.collector.records import SpanView
from turnwatch.collector.resent_history import ParsedContent

from tests.conversations import call_attributes, conversation_spans, received, span, texts
from tests.test_resent_history import (
    HISTORIES,
    RESENDING,
    comparable,
    edited_history,
    reference,
    through_pipeline,
)
from tests.test_routing import CODEC, Member, Routing
from turnwatch.schema import Session

COLLECTORS = 3


def through_member(spans: list[SpanView]) -> Member:
    """Each span as its own request to the next of three routing collectors, every record
    sealed onto one partition of one member, in the order the collectors sent them."""
    collectors = [Routing(queue_size=len(spans) + 1) for _ in range(COLLECTORS)]
    member = Member()
    offsets = itertools.count()
    for item, collector in zip(spans, itertools.cycle(collectors), strict=False):
        assert collector.pipeline.accept_spans([item]) == 0
        for _, record in collector.queued():
            asyncio.run(member.take(record, 0, next(offsets)))
    return member


def closed(member: Member) -> list[Session]:
    member.pipeline.close_all()
    return member.built.take()


@pytest.mark.parametrize("dialect", RESENDING)
def test_a_member_holds_a_long_resent_conversation_as_its_deltas(dialect: str) -> None:
    calls = 110  # 220 turns
    resent = received(conversation_spans(dialect, f"member-{dialect}", calls, resent=True))
    deltas = received(conversation_spans(dialect, f"member-{dialect}", calls, resent=False))
    from_resent, from_deltas = through_member(resent), through_member(deltas)

    [state] = from_resent.pipeline.sessionizer.open_sessions()
    first, *later = state.observations
    assert isinstance(first.content, ParsedContent) and first.resends is None
    assert [call.resends for call in later] == state.observations[:-1]
    for call in later:  # the previous answer (resent as history) and the new question
        assert [message.role for message in call.content.inputs] == ["assistant", "user"]
    # The tail (the whole input the next call is compared with) is the calls' own messages in
    # one list, not the copy the bus brought.
    [tail] = state.tails.values()
    held = [message for call in state.observations for message in call.content.inputs]
    assert len(tail.history) == len(held) == 2 * calls - 1
    assert all(kept is own for kept, own in zip(tail.history, held, strict=True))
    assert tail.extra_bytes == sys.getsizeof(tail.history)

    resent_bytes = from_resent.pipeline.sessionizer.buffered_bytes
    delta_bytes = from_deltas.pipeline.sessionizer.buffered_bytes
    assert delta_bytes < resent_bytes - tail.extra_bytes < 1.5 * delta_bytes
    # Every call's whole input, as the member held it before: over 20 times as much here.
    whole_inputs = sum(messages_size(tail.history[: 2 * call + 1]) for call in range(calls))
    assert 20 * resent_bytes < whole_inputs

    [session] = closed(from_resent)
    assert not session.truncated and not session.incomplete
    expected = texts(f"member-{dialect}", 2 * calls)
    assert [(turn.role.value, turn.text) for turn in session.turns] == expected
    [delta_session] = closed(from_deltas)
    assert comparable(session) == comparable(delta_session)
    [one_process], _ = through_pipeline(resent)
    assert comparable(session) == comparable(one_process)


def ordered_spans(dialect: str, inputs: list[list], order: list[int]) -> list[SpanView]:
    """Call k sends `inputs[k]`; the calls arrive in `order`."""
    messages = texts(f"cut-{dialect}", 2 * len(inputs), length=40)
    spans = [
        span(f"cut-{dialect}", call, call_attributes(dialect, sent, messages[2 * call + 1]))
        for call, sent in enumerate(inputs)
    ]
    return received([spans[call] for call in order])


def held_calls(spans: list[SpanView]) -> tuple[Member, list]:
    """The member the spans went to and the calls its open session holds, in arrival order."""
    member = through_member(spans)
    [state] = member.pipeline.sessionizer.open_sessions()
    return member, state.observations


@pytest.mark.parametrize("dialect", RESENDING)
def test_an_edited_or_reordered_history_is_kept_whole_and_assembles_as_sent(dialect: str) -> None:
    messages = texts(f"cut-{dialect}", 8, length=40)
    spans = ordered_spans(dialect, edited_history(messages), [0, 1, 2, 3])
    member, calls = held_calls(spans)
    assert [call.resends for call in calls] == [None, calls[0], None, calls[2]]
    assert [len(call.content.inputs) for call in calls] == [1, 2, 4, 2]
    [session] = closed(member)
    assert comparable(session) == comparable(reference(spans))
    assert [turn.text for turn in session.turns].count("summary of the first exchange") == 1

    # Calls 1 and 2 reach the member in the other order: call 1 does not extend call 2 (kept
    # whole), and call 3 extends call 1, the channel's last when it came.
    whole = [messages[: 2 * call + 1] for call in range(4)]
    spans = ordered_spans(dialect, whole, [0, 2, 1, 3])
    member, calls = held_calls(spans)
    assert [call.resends for call in calls] == [None, calls[0], None, calls[2]]
    assert [len(call.content.inputs) for call in calls] == [1, 4, 3, 4]
    [session] = closed(member)
    assert comparable(session) == comparable(reference(spans))
    assert [turn.text for turn in session.turns] == [text for _, text in messages]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spans=HISTORIES)
def test_any_history_a_member_assembles_as_one_process_does(spans: list[SpanView]) -> None:
    [session] = closed(through_member(spans))
    [one_process], _ = through_pipeline(spans)
    assert comparable(session) == comparable(one_process)
    assert comparable(session) == comparable(reference(spans))


def test_a_call_a_member_forwards_crosses_the_bus_again_whole() -> None:
    """A member re-seals what waited on its trace's partition (`ObservationIntake._forward`):
    the call it opened goes on with its whole input and its channel."""
    [first, second] = received(conversation_spans("openllmetry", "forward", 2, resent=True))
    routing = Routing()
    routing.pipeline.accept_spans([first, second])
    [record] = [record for _, record in routing.queued() if record.route == "conversation"]
    opened = CODEC.open_observations(record)
    forwarded = CODEC.open_observations(CODEC.seal_observations("conversation", opened))
    for before, after in zip(CODEC.open_observations(record), forwarded, strict=True):
        assert isinstance(after.observation.content, ParsedContent)
        assert after.observation.content.channel == "openllmetry"
        assert after.observation.content.inputs == before.observation.content.inputs
    assert [len(item.observation.content.inputs) for item in forwarded] == [1, 3]


def test_a_record_from_a_collector_before_channels_keeps_its_inputs_whole() -> None:
    """A rolling upgrade (members first): a call sealed without a channel is held as it came."""
    spans = received(conversation_spans("genai", "upgrade", 2, resent=True))
    routing = Routing()
    routing.pipeline.accept_spans(spans)
    [record] = [record for _, record in routing.queued() if record.route == "conversation"]
    payload = orjson.loads(CODEC.sealer.open(record.sealed, b"conversation"))
    for item in payload:
        del item["observation"]["channel"]
    older = record.model_copy(
        update={"sealed": CODEC.sealer.seal(orjson.dumps(payload), b"conversation")}
    )
    member = Member()
    asyncio.run(member.take(older, 0, 0))
    [state] = member.pipeline.sessionizer.open_sessions()
    assert [call.content for call in state.observations] == [None, None]
    assert [len(call.inputs) for call in state.observations] == [1, 3]
    assert [call.resends for call in state.observations] == [None, None]
    [session] = closed(member)
    assert [turn.text for turn in session.turns] == [text for _, text in texts("upgrade", 4)]
