"""De-identification in worker processes gives what one thread gives, in order, drains, and
makes the caller wait when two sessions per worker are in flight."""

from __future__ import annotations

import asyncio
import concurrent.futures

import pytest
from prometheus_client import CollectorRegistry
from turnwatch.collector.deid.config import DeidConfig
from turnwatch.collector.deid.stage import build_deidentifier, build_deidentifying_sink
from turnwatch.collector.deid.workers import Workers, container_cores
from turnwatch.collector.pipeline import HandedOn

from benchmarks.pii.generate import make_corpus
from benchmarks.pii.sessions import conversation_session
from tests.conftest import CapturingSink
from turnwatch.schema import Session

pytestmark = pytest.mark.slow  # worker processes each load the spaCy model

SECRET = "workers-secret-0123456789"


def test_the_container_has_at_least_one_core():
    assert container_cores() >= 1


async def test_worker_processes_give_the_single_process_results_on_the_pii_corpus(tmp_path):
    corpus = make_corpus(seed=11, texts=0, conversations=24).conversations
    sessions = [conversation_session(conversation) for conversation in corpus]
    # Two revisions of each session, as late spans make them: both must arrive, in order.
    sessions += [session.model_copy(update={"revision": 2}) for session in sessions]
    single = build_deidentifier(DeidConfig(secret=SECRET), SECRET.encode())
    expected = [single.deidentify(session).session for session in sessions]

    downstream = CapturingSink()
    config = DeidConfig(secret=SECRET, workers=2)
    sink = build_deidentifying_sink(config, "production", tmp_path, CollectorRegistry(), downstream)
    try:
        assert sink.workers.size == 2
        # Two sessions per worker in flight: the fifth deliver waits (back-pressure).
        *admitted, fifth = (
            sessions[0].model_copy(update={"session_id": letter * 32}) for letter in "abcde"
        )
        for session in admitted:
            await sink.deliver(session)
        waiting = asyncio.create_task(sink.deliver(fifth))
        await asyncio.sleep(0)
        assert not waiting.done()
        await waiting
        await sink.flush()
        assert len(downstream.sessions) == 5
        downstream.sessions.clear()

        for session in sessions:
            await sink.deliver(session)
        await sink.flush()
    finally:
        sink.close()
    got = {(s.session_id, s.revision): s for s in downstream.sessions}
    assert len(got) == len(sessions)
    for want in expected:
        assert got[(want.session_id, want.revision)] == want
    order = [(s.session_id, s.revision) for s in downstream.sessions]
    for session in sessions[: len(corpus)]:
        assert order.index((session.session_id, 1)) < order.index((session.session_id, 2))


class LookingOneTurnLater(CapturingSink):
    """Takes a session and looks, one turn of the event loop later, whether its sender had
    been told meanwhile: any other task could run in that turn (a kill there too)."""

    def __init__(self, told: list[str]) -> None:
        super().__init__()
        self.told = told
        self.seen: list[bool] = []

    async def deliver(self, session: Session, handed_on: HandedOn | None = None) -> bool:
        loop = asyncio.get_running_loop()
        loop.call_soon(lambda: self.seen.append(session.session_id in self.told))
        return await super().deliver(session)


async def test_the_sender_is_told_in_the_same_step_as_the_next_stage_took_the_session(tmp_path):
    """The write-ahead log's done mark follows the bus taking a session with nothing between:
    a kill between the two had the restart publish the session again as a new revision."""
    told: list[str] = []
    downstream = LookingOneTurnLater(told)
    config = DeidConfig(secret=SECRET, workers=2)
    sink = build_deidentifying_sink(config, "production", tmp_path, CollectorRegistry(), downstream)
    sessions = [
        conversation_session(conversation).model_copy(update={"session_id": letter * 32})
        for letter, conversation in zip(
            "abc", make_corpus(seed=5, texts=0, conversations=3).conversations, strict=True
        )
    ]
    try:
        for session in sessions:

            def handed_on(error: BaseException | None, session_id=session.session_id) -> None:
                assert error is None
                told.append(session_id)

            assert await sink.deliver(session, handed_on)  # still in flight
        await sink.flush()
    finally:
        sink.close()
    assert sorted(told) == sorted(session.session_id for session in sessions)
    assert downstream.seen == [True, True, True]


def test_a_new_session_goes_to_the_least_busy_worker_and_its_revisions_stay_with_it():
    submitted: list[tuple[int, str]] = []
    pending: list[concurrent.futures.Future] = []

    def submit(lane: int, session: Session) -> concurrent.futures.Future:
        submitted.append((lane, session.session_id))
        pending.append(concurrent.futures.Future())
        return pending[-1]

    workers = Workers(2, submit)
    base = conversation_session(make_corpus(seed=5, texts=0, conversations=1).conversations[0])

    def session(letter: str, revision: int = 1) -> Session:
        return base.model_copy(update={"session_id": letter * 32, "revision": revision})

    for item in (session("a"), session("b"), session("a", 2), session("c")):
        workers.submit(item)
    # b went to the idle worker; a's revision to a's worker although it was busier; c to the
    # worker with fewer in flight (b's).
    assert submitted == [(0, "a" * 32), (1, "b" * 32), (0, "a" * 32), (1, "c" * 32)]
    assert workers.in_flight() == [2, 2]
    for future in pending[:3]:
        future.set_result(None)
    assert workers.in_flight() == [0, 1]
    workers.submit(session("d"))
    workers.submit(session("b", 2))
    assert submitted[-2:] == [(0, "d" * 32), (1, "b" * 32)]


def test_a_submit_the_executor_refuses_is_not_counted_in_flight():
    def refuse(lane: int, session: Session) -> concurrent.futures.Future:
        raise RuntimeError("cannot schedule new futures after shutdown")

    workers = Workers(2, refuse)
    base = conversation_session(make_corpus(seed=5, texts=0, conversations=1).conversations[0])
    with pytest.raises(RuntimeError):
        workers.submit(base)
    assert workers.in_flight() == [0, 0]
