"""The handoff stage on its own: bounded, in order, and every session it loses counted by reason."""

from __future__ import annotations

import asyncio

from prometheus_client import CollectorRegistry
from turnwatch.collector.config import HandoffConfig
from turnwatch.collector.handoff import Handoff
from turnwatch.collector.metrics import CollectorMetrics
from turnwatch.collector.pipeline import HandedOn, PendingSession, SessionBuilder

from tests.conftest import CapturingSink, make_settings
from tests.stages import assembling_pipeline
from tests.test_sessionizer import exchange
from turnwatch.bus.ledger import OffsetLedger, Position
from turnwatch.schema import Session

SETTINGS = make_settings()


def closed_sessions(count: int) -> list[PendingSession]:
    """`count` real closed, sampled sessions, as the pipeline offers them."""
    pipeline, built = assembling_pipeline(SETTINGS.collector, CollectorMetrics(CollectorRegistry()))
    for number in range(count):
        assert pipeline.accept_spans([exchange(f"conv-{number}", f"{number + 1:032x}", 0)]) == 0
    pipeline.close_all()
    assert len(built.pending) == count
    return built.pending


def keys(pending: list[PendingSession]) -> list[str]:
    """The conversation keys as the chatbot named them (the state key is scoped by service)."""
    return [item.closed.state.conversation_key for item in pending]


class Harness:
    def __init__(self, next_stage: CapturingSink, queue_size: int = 10, **build_faults) -> None:
        self.registry = CollectorRegistry()
        metrics = CollectorMetrics(self.registry)
        builder = SessionBuilder(SETTINGS.collector.service_fallback, metrics, b"k" * 32)
        self.handoff = Handoff(
            HandoffConfig(queue_size=queue_size, high_watermark=0.5),
            metrics,
            FailingBuild(builder, **build_faults),
            next_stage,
        )

    def dropped(self, reason: str) -> float:
        labels = {"reason": reason}
        return self.registry.get_sample_value("turnwatch_handoff_dropped_total", labels) or 0.0

    def delivered(self) -> float:
        return self.registry.get_sample_value("turnwatch_handoff_delivered_total") or 0.0

    async def run_until_drained(self) -> None:
        task = asyncio.create_task(self.handoff.run())
        await self.handoff.drain()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


class FailingBuild:
    """The real builder, except for the session ids it is told to fail on."""

    def __init__(self, builder: SessionBuilder, fail_on: frozenset[str] = frozenset()) -> None:
        self.builder = builder
        self.fail_on = fail_on

    def __call__(self, pending: PendingSession) -> Session:
        if pending.closed.state.key in self.fail_on:
            raise ValueError("assembler bug")
        return self.builder(pending)


class RefusingSink(CapturingSink):
    def __init__(self, refuse: str) -> None:
        super().__init__()
        self.refuse = refuse

    async def deliver(self, session: Session, handed_on: HandedOn | None = None) -> bool:
        if session.conversation_key == self.refuse:
            raise RuntimeError("next stage down")
        return await super().deliver(session)


async def test_sessions_are_delivered_in_order_and_counted():
    pending = closed_sessions(3)
    sink = CapturingSink()
    harness = Harness(sink)
    for item in pending:
        harness.handoff.offer(item)
    await harness.run_until_drained()
    assert [s.conversation_key for s in sink.sessions] == keys(pending)
    assert harness.delivered() == 3


async def test_a_full_queue_drops_the_newest_and_overload_starts_at_the_watermark():
    pending = closed_sessions(5)
    sink = CapturingSink()
    harness = Harness(sink, queue_size=4)
    harness.handoff.offer(pending[0])
    assert not harness.handoff.overloaded()
    harness.handoff.offer(pending[1])
    assert harness.handoff.overloaded()  # 2 of 4 is the 0.5 watermark
    for item in pending[2:]:
        harness.handoff.offer(item)
    assert harness.dropped("queue_full") == 1
    await harness.run_until_drained()
    assert [s.conversation_key for s in sink.sessions] == keys(pending[:4])


async def test_an_assembly_or_delivery_failure_costs_that_session_only():
    first, second, third = closed_sessions(3)
    sink = RefusingSink(refuse=third.closed.state.conversation_key)
    harness = Harness(sink, fail_on=frozenset({first.closed.state.key}))
    for item in (first, second, third):
        harness.handoff.offer(item)
    await harness.run_until_drained()
    assert [s.conversation_key for s in sink.sessions] == [second.closed.state.conversation_key]
    assert harness.dropped("assembly_error") == 1
    assert harness.dropped("sink_error") == 1
    assert harness.delivered() == 1


class StuckSink(CapturingSink):
    """A next stage that takes the first session and never returns (a full bus, say)."""

    def __init__(self) -> None:
        super().__init__()
        self.entered = asyncio.Event()

    async def deliver(self, session: Session, handed_on: HandedOn | None = None) -> bool:
        self.entered.set()
        await asyncio.Event().wait()
        raise AssertionError("never set")


async def test_sessions_still_queued_when_a_drain_runs_out_are_counted_lost():
    pending = closed_sessions(3)
    sink = StuckSink()
    harness = Harness(sink)
    for item in pending:
        harness.handoff.offer(item)
    task = asyncio.create_task(harness.handoff.run())
    await asyncio.wait_for(sink.entered.wait(), 5)  # one in delivery, two behind it
    stranded = harness.handoff.strand()
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert (stranded.lost, stranded.kept) == (3, 0)
    assert harness.dropped("shutdown") == 3
    assert harness.handoff.queue.empty()


class InFlightSink(CapturingSink):
    """A next stage that takes each session and finishes it later (de-identification worker
    processes): `deliver` says it is still working on it, and keeps whom to tell."""

    def __init__(self) -> None:
        super().__init__()
        self.in_flight: list[HandedOn] = []

    async def deliver(self, session: Session, handed_on: HandedOn | None = None) -> bool:
        await super().deliver(session)
        assert handed_on is not None
        self.in_flight.append(handed_on)
        return True


def held_on_the_bus(pending: list[PendingSession]) -> OffsetLedger:
    """Each session holds one observation on the bus, as the sessionizer role's sessions do."""
    ledger = OffsetLedger()
    ledger.assign([("observations", 0)])
    for offset, item in enumerate(pending):
        position = Position("observations", 0, offset)
        ledger.hold(position)
        item.ledger, item.held = ledger, [position]
    return ledger


async def test_a_session_still_in_flight_in_the_next_stage_keeps_its_hold_until_it_is_handed_on():
    pending = closed_sessions(3)
    ledger = held_on_the_bus(pending)
    sink = InFlightSink()
    harness = Harness(sink)
    for item in pending:
        harness.handoff.offer(item)
    await harness.run_until_drained()
    assert len(sink.in_flight) == 3
    assert ledger.held() == 3
    assert harness.delivered() == 0

    delivered, failed, _stopped = sink.in_flight  # a shutdown stops the last one: no call
    delivered(None)
    failed(RuntimeError("bus down"))
    assert harness.delivered() == 1  # told in the step the next stage took it, not a turn later
    assert harness.dropped("sink_error") == 1
    assert ledger.held() == 1
    assert ledger.committable("observations", 0, 3) == 2


async def test_a_rebalance_under_way_drops_no_session_only_a_partition_that_moved_does():
    """An eager rebalance revokes every partition first; one that comes straight back is not
    fetched again, so its sessions queued meanwhile are published, not left to a replay."""
    pending = closed_sessions(2)
    ledger = held_on_the_bus(pending)
    sink = CapturingSink()
    harness = Harness(sink)
    ledger.revoke([("observations", 0)])
    harness.handoff.offer(pending[0])
    await harness.run_until_drained()
    assert [s.conversation_key for s in sink.sessions] == ["conv-0"]
    assert harness.dropped("partition_moved") == 0
    ledger.assign([])  # it moved to another member, which replays and publishes the rest
    harness.handoff.offer(pending[1])
    await harness.run_until_drained()
    assert harness.dropped("partition_moved") == 1 and len(sink.sessions) == 1
