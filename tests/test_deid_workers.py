"""De-identification in worker processes gives what one thread gives, in order, drains, and
makes the caller wait when two sessions per worker are in flight."""

from __future__ import annotations

import asyncio

import pytest
from prometheus_client import CollectorRegistry
from turnwatch.collector.deid.config import DeidConfig
from turnwatch.collector.deid.stage import build_deidentifier, build_deidentifying_sink
from turnwatch.collector.deid.workers import container_cores

from benchmarks.pii.generate import make_corpus
from benchmarks.pii.sessions import conversation_session
from tests.conftest import CapturingSink

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
