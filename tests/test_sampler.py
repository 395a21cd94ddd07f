"""Sampler: consistent hashing of the conversation key, nested rates, and force triggers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry
from turnwatch.collector.metrics import CollectorMetrics
from turnwatch.collector.pipeline import CollectorPipeline
from turnwatch.collector.records import STATUS_ERROR, SpanView
from turnwatch.collector.sampler import Sampler, SamplingSignals, hash_fraction

from tests.stages import AssembledAtOnce, assembling_pipeline
from turnwatch.app.settings import SamplingConfig, load_settings
from turnwatch.schema import SamplingReason, Session

REPO = Path(__file__).resolve().parent.parent
KEYS = [f"conversation-{number}" for number in range(5_000)]
QUIET = SamplingSignals(error_spans=0, tool_errors=0, forced_attribute=None)


def selected(rate: float, keys: list[str] = KEYS) -> set[str]:
    sampler = Sampler(SamplingConfig(rate=rate))
    return {key for key in keys if sampler.decide(key, QUIET).sampled}


def test_every_replica_makes_the_same_decision_for_a_key() -> None:
    first, second = Sampler(SamplingConfig(rate=0.3)), Sampler(SamplingConfig(rate=0.3))
    for key in KEYS[:500]:
        assert first.decide(key, QUIET) == second.decide(key, QUIET)


def test_decision_does_not_depend_on_the_process_hash_seed() -> None:
    """A replica is another process: Python's randomised str hash must play no part."""
    script = (
        "import json, sys\n"
        "from turnwatch.collector.sampler import hash_fraction\n"
        "print(json.dumps([hash_fraction(k) for k in sys.argv[1:]]))\n"
    )
    keys = KEYS[:50]
    environment = {**os.environ, "PYTHONHASHSEED": "12345", "PYTHONPATH": str(REPO)}
    output = subprocess.run(
        [sys.executable, "-c", script, *keys],
        capture_output=True,
        text=True,
        check=True,
        env=environment,
        cwd=REPO,
        timeout=30,
    ).stdout
    assert json.loads(output) == [hash_fraction(key) for key in keys]


def test_lower_rates_select_subsets_of_higher_rates() -> None:
    at_10, at_30, at_100 = selected(0.1), selected(0.3), selected(1.0)
    assert at_10 < at_30 < at_100
    assert at_100 == set(KEYS)
    assert selected(0.0) == set()


@pytest.mark.parametrize("rate", [0.01, 0.1, 0.3, 0.5, 0.9])
def test_selected_fraction_is_close_to_the_rate(rate: float) -> None:
    fraction = len(selected(rate)) / len(KEYS)
    # 5000 keys: the standard error is below 0.0071 for any rate; allow about four of them.
    assert abs(fraction - rate) < 0.03


def test_decision_records_rate_and_hash_fraction() -> None:
    decision = Sampler(SamplingConfig(rate=0.25)).decide("conversation-7", QUIET)
    assert decision.rate == 0.25
    assert decision.hash_fraction == hash_fraction("conversation-7")
    assert decision.sampled == (decision.hash_fraction < 0.25)
    assert decision.reason is (
        SamplingReason.RATE if decision.sampled else SamplingReason.NOT_SELECTED
    )


# --- force triggers through the pipeline ------------------------------------------------------

RATE = 0.1
UNLUCKY = next(key for key in KEYS if hash_fraction(key) >= 0.5)


def _pipeline(**overrides: object) -> tuple[CollectorPipeline, CollectorRegistry]:
    settings = load_settings(None, {"sampling.rate": RATE, **overrides})
    registry = CollectorRegistry()
    pipeline, _built = assembling_pipeline(settings.collector, CollectorMetrics(registry))
    return pipeline, registry


def _span(
    conversation: str,
    attributes: dict,
    *,
    status_code: int = 0,
    span_id: str = "0000000000000001",
) -> SpanView:
    return SpanView(
        trace_id="0af7651916cd43dd8448eb211c80319c",
        span_id=span_id,
        parent_span_id="",
        name="span",
        kind=1,
        start_ns=1_700_000_000_000_000_000,
        end_ns=1_700_000_001_000_000_000,
        attributes={"gen_ai.conversation.id": conversation, **attributes},
        events=[],
        status_code=status_code,
        resource={"service.name": "support-bot"},
        scope_name="test",
    )


def _chat(conversation: str, **kwargs) -> SpanView:
    return _span(
        conversation,
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.input.messages": json.dumps(
                [{"role": "user", "parts": [{"type": "text", "content": "cancel my order"}]}]
            ),
            "gen_ai.output.messages": json.dumps(
                [{"role": "assistant", "parts": [{"type": "text", "content": "Done."}]}]
            ),
        },
        **kwargs,
    )


def _failed_tool(conversation: str) -> SpanView:
    return _span(
        conversation,
        {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "cancel_order",
            "gen_ai.tool.call.id": "call_1",
            "error.type": "TimeoutError",
        },
        status_code=STATUS_ERROR,
        span_id="0000000000000002",
    )


def _run(pipeline: CollectorPipeline, spans: list[SpanView]) -> list[Session]:
    assert pipeline.accept_spans(spans) == 0
    pipeline.close_all()
    built = pipeline.next_stage
    assert isinstance(built, AssembledAtOnce)
    return built.take()


def _sampled_total(registry: CollectorRegistry, reason: str) -> float:
    value = registry.get_sample_value("turnwatch_sessions_sampled_total", {"reason": reason})
    return value or 0.0


def test_a_quiet_session_outside_the_rate_is_not_sampled() -> None:
    pipeline, registry = _pipeline()
    assert _run(pipeline, [_chat(UNLUCKY)]) == []
    assert _sampled_total(registry, "not_selected") == 1


def test_a_session_inside_the_rate_is_sampled_for_the_rate() -> None:
    lucky = next(key for key in KEYS if hash_fraction(key) < RATE)
    pipeline, registry = _pipeline()
    [session] = _run(pipeline, [_chat(lucky)])
    assert session.sampling.sampled
    assert session.sampling.reason is SamplingReason.RATE
    assert _sampled_total(registry, "rate") == 1


@pytest.mark.parametrize(
    ("spans", "reason"),
    [
        ([_chat(UNLUCKY, status_code=STATUS_ERROR)], SamplingReason.FORCED_ERROR),
        ([_chat(UNLUCKY), _failed_tool(UNLUCKY)], SamplingReason.FORCED_TOOL_ERROR),
        (
            [_chat(UNLUCKY), _span(UNLUCKY, {"user.feedback": "negative"}, span_id="03")],
            SamplingReason.FORCED_ATTRIBUTE,
        ),
    ],
    ids=["error_span", "tool_error", "negative_feedback"],
)
def test_force_triggers_sample_a_session_the_rate_would_not(
    spans: list[SpanView], reason: SamplingReason
) -> None:
    pipeline, registry = _pipeline()
    [session] = _run(pipeline, spans)
    assert session.conversation_key == UNLUCKY
    assert session.sampling.sampled
    assert session.sampling.reason is reason
    assert session.sampling.hash_fraction >= RATE
    assert _sampled_total(registry, reason.value) == 1
    assert _sampled_total(registry, "not_selected") == 0


def test_a_trigger_is_named_even_when_the_rate_alone_would_sample() -> None:
    lucky = next(key for key in KEYS if hash_fraction(key) < RATE)
    pipeline, registry = _pipeline()
    [session] = _run(pipeline, [_chat(lucky), _failed_tool(lucky)])
    assert session.sampling.reason is SamplingReason.FORCED_TOOL_ERROR
    assert _sampled_total(registry, "rate") == 0


def test_configured_force_attribute_is_honoured_and_other_values_are_not() -> None:
    pipeline, _ = _pipeline(**{"sampling.force_attributes": {"app.escalated": ["yes"]}})
    assert _run(pipeline, [_span(UNLUCKY, {"app.escalated": "no"})]) == []
    # The default trigger is replaced by the configured one.
    assert _run(pipeline, [_span(UNLUCKY, {"user.feedback": "negative"})]) == []
    [session] = _run(pipeline, [_span(UNLUCKY, {"app.escalated": "yes"})])
    assert session.sampling.reason is SamplingReason.FORCED_ATTRIBUTE


def test_error_triggers_can_be_switched_off() -> None:
    pipeline, _ = _pipeline(
        **{"sampling.force_on_error": False, "sampling.force_on_tool_error": False}
    )
    spans = [_chat(UNLUCKY, status_code=STATUS_ERROR), _failed_tool(UNLUCKY)]
    assert _run(pipeline, spans) == []
