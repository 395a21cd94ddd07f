"""The sessionizer's size accounting against the memory Python really allocates for it.

`turnwatch_session_buffer_bytes` and `sessions.max_buffered_bytes` are only as good as the sizes
behind them. Here conversations of every dialect, sent as deltas or with history resent, open and
closed (kept for the reopen window), go through the receiver's decoder into the pipeline while
`tracemalloc` counts what stays allocated; the accounted bytes must be within 20% of it.
"""

from __future__ import annotations

import gc
import tracemalloc

import pytest
from prometheus_client import CollectorRegistry
from turnwatch.collector.metrics import CollectorMetrics
from turnwatch.collector.pipeline import CollectorPipeline, PendingSession

from tests.conversations import DIALECTS, conversation_spans, received
from turnwatch.app.settings import load_settings


class Dropped:
    """A next stage that takes nothing: what stays allocated is what the sessionizer holds."""

    def offer(self, pending: PendingSession) -> None:
        return None

    def overloaded(self) -> bool:
        return False


def allocated_and_accounted(
    dialect: str, calls: int, resent: bool, conversations: int, close: bool
) -> tuple[int, int]:
    settings = load_settings(None, {})
    pipeline = CollectorPipeline(
        settings.collector, CollectorMetrics(CollectorRegistry()), Dropped()
    )

    def batch(number: int) -> list:
        spans = received(conversation_spans(dialect, f"mem-{number}", calls, resent))
        if close:
            spans[-1].attributes["turnwatch.session.end"] = "true"
        return spans

    pipeline.accept_spans(batch(-1))  # warms the decoder's caches and the metric children
    held_before = pipeline.sessionizer.held_bytes
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for number in range(conversations):
            pipeline.accept_spans(batch(number))  # the batch is freed once accepted
        gc.collect()
        allocated = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    return allocated, pipeline.sessionizer.held_bytes - held_before


@pytest.mark.slow  # a long run: tracemalloc slows every allocation, about 30 s in all
@pytest.mark.parametrize("close", [False, True], ids=["open", "kept"])
@pytest.mark.parametrize(
    ("calls", "resent"), [(8, False), (8, True), (60, True)], ids=["deltas", "resent", "long"]
)
@pytest.mark.parametrize("dialect", DIALECTS)
def test_accounted_bytes_are_within_a_fifth_of_what_is_allocated(
    dialect: str, calls: int, resent: bool, close: bool
) -> None:
    allocated, accounted = allocated_and_accounted(
        dialect, calls, resent, 20 if calls == 8 else 3, close
    )
    assert allocated > 100_000  # enough to measure
    assert 0.8 * allocated <= accounted <= 1.2 * allocated, (accounted, allocated)
