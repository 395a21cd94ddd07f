"""Revision identity: a returning conversation is never taken for a redelivery downstream.

Downstream stages drop a record whose (session id, revision) they have seen: the bus consumer's
and the exporter's `SeenRevisions` (100 k entries each by default). Revisions come from the
close time (`RevisionClock`), so they grow across a restart and past the sessionizer's memory of
closed conversations, which is smaller than those dedupe memories.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry
from turnwatch.collector.metrics import CollectorMetrics
from turnwatch.collector.revision_clock import REVISION_COUNTER_SPAN, RevisionClock

from tests.conversations import conversation_spans, received
from tests.stages import assembling_pipeline
from turnwatch.app.settings import load_settings
from turnwatch.bus.records import SESSIONS, revision_of
from turnwatch.revisions import SeenRevisions
from turnwatch.schema import Session

ROOT = Path(__file__).resolve().parents[1]


class Downstream:
    """The two dedupe memories a session record meets after the collector."""

    def __init__(self) -> None:
        self.bus = SeenRevisions(100_000)
        self.exporter = SeenRevisions(100_000)

    def accepts(self, session: Session) -> bool:
        identity = (session.session_id, revision_of(session), SESSIONS)
        if self.bus.seen(*identity):
            return False
        self.bus.add(*identity)
        return self.exporter.first_time(session.session_id, session.revision)


def conversation(key: str, call: int = 0) -> list:
    spans = received(conversation_spans("genai", key, call + 1, resent=False))[call:]
    spans[-1].attributes["turnwatch.session.end"] = "true"
    return spans


def start_pipeline(**overrides: object):
    settings = load_settings(None, {"sessions.reopen_window_seconds": 0, **overrides})
    return assembling_pipeline(settings.collector, CollectorMetrics(CollectorRegistry()))


def test_revisions_grow_with_the_close_time_and_within_a_millisecond() -> None:
    now = [1_800_000_000.0005]
    clock = RevisionClock(lambda: now[0])
    first, second = clock.next(), clock.next()
    assert first == 1_800_000_000_000 * REVISION_COUNTER_SPAN
    assert second == first + 1
    now[0] -= 5.0  # the wall clock steps back: the numbers still grow
    assert clock.next() == second + 1
    now[0] += 10.0
    assert clock.next() == 1_800_000_005_000 * REVISION_COUNTER_SPAN
    assert clock.next() < 2**53


def test_a_conversation_returning_after_a_restart_is_a_new_revision_downstream() -> None:
    downstream = Downstream()
    before, built = start_pipeline()
    before.accept_spans(conversation("returning"))
    [first] = built.take()
    assert downstream.accepts(first)
    assert not downstream.accepts(first)  # a redelivery is still dropped

    after, built = start_pipeline()  # a new process: nothing of `before` survives
    after.accept_spans(conversation("returning", call=1))
    [returned] = built.take()
    assert returned.session_id == first.session_id
    assert returned.revision > first.revision
    assert downstream.accepts(returned)


def test_a_conversation_returning_past_the_remembered_sessions_is_a_new_revision() -> None:
    downstream = Downstream()
    pipeline, built = start_pipeline(**{"sessions.max_remembered_sessions": 2})
    pipeline.accept_spans(conversation("old"))
    for number in range(5):  # more conversations than the sessionizer remembers
        pipeline.accept_spans(conversation(f"other-{number}"))
    assert "old" not in pipeline.sessionizer.revisions
    pipeline.accept_spans(conversation("old", call=1))

    sessions = built.take()
    assert [s.conversation_key for s in sessions] == [
        "old",
        *(f"other-{n}" for n in range(5)),
        "old",
    ]
    assert all(downstream.accepts(session) for session in sessions)
    assert sessions[-1].revision > sessions[0].revision
    revisions = [session.revision for session in sessions]
    assert revisions == sorted(revisions) and len(set(revisions)) == len(revisions)


CLOSE_ONE = """
import json, sys
from prometheus_client import CollectorRegistry
from turnwatch.collector.metrics import CollectorMetrics
from turnwatch.app.settings import load_settings
from tests.conversations import conversation_spans, received
from tests.stages import assembling_pipeline

settings = load_settings(None, {})
pipeline, built = assembling_pipeline(settings.collector, CollectorMetrics(CollectorRegistry()))
call = int(sys.argv[1])
spans = received(conversation_spans("genai", "across-processes", call + 1, resent=False))[call:]
spans[-1].attributes["turnwatch.session.end"] = "true"
pipeline.accept_spans(spans)
[session] = built.take()
print(json.dumps([session.session_id, session.revision]))
"""


@pytest.mark.slow  # two Python processes
def test_a_conversation_closed_by_two_processes_in_turn_gets_growing_revisions() -> None:
    def close_in_a_new_process(call: int) -> tuple[str, int]:
        completed = subprocess.run(
            [sys.executable, "-c", CLOSE_ONE, str(call)],
            capture_output=True,
            text=True,
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            timeout=120,
            check=False,
        )
        assert completed.returncode == 0, completed.stderr[-2000:]
        session_id, revision = json.loads(completed.stdout)
        return session_id, revision

    first = close_in_a_new_process(0)
    second = close_in_a_new_process(1)
    assert second[0] == first[0]
    assert second[1] > first[1]
    log = SeenRevisions(10)
    assert log.first_time(*first) and log.first_time(*second)
