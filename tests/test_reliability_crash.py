"""SIGKILL at random moments of a burst of 200 conversations (embedded spool and write-ahead log
on): no conversation the client saw acknowledged is lost, no revision is counted twice and none
is cut into two revisions. The bus may deliver a score record again after the kill (it is
at-least-once); the restarted exporter must find it counted already.

Each run kills `turnwatch serve` after a random number of acknowledged requests plus a random
fraction of a request, starts it again on the same data directory and waits until everything is
scored and quiet (tests/crash.py). `TURNWATCH_TEST_CRASH_RUNS` sets the number of runs (3),
`TURNWATCH_TEST_CRASH_SEED` the random seed (printed on failure); benchmarks/crash.py prints the
same runs as a table, 10 by default.
"""

from __future__ import annotations

import os
import random

import pytest
from turnwatch.collector.session_keys import session_id_for

from tests.crash import ID_KEY, SERVICE, burst, crash_run, random_kill_point

pytestmark = pytest.mark.slow  # two `turnwatch serve` subprocesses per run

RUNS = int(os.environ.get("TURNWATCH_TEST_CRASH_RUNS", "3"))
CONVERSATIONS = 200


def test_sigkill_during_a_burst_loses_no_acknowledged_conversation_and_counts_none_twice(
    tmp_path,
):
    seed = int(os.environ.get("TURNWATCH_TEST_CRASH_SEED") or random.randrange(1 << 30))
    rng = random.Random(seed)
    print(f"crash runs with TURNWATCH_TEST_CRASH_SEED={seed}")  # shown when a run fails
    for number in range(RUNS):
        directory = tmp_path / f"crash-{number}"
        run = crash_run(directory, CONVERSATIONS, random_kill_point(rng, CONVERSATIONS))
        where = f"seed {seed}, run {number}, killed after {run.kill_after} of {run.requests}"
        everyone = {
            session_id_for(SERVICE, key, ID_KEY)
            for request in burst(directory.name, CONVERSATIONS)
            for key in request.opens
        }
        assert run.whole | run.partial, where
        assert run.lost == set(), where
        assert run.counted_twice == 0, where
        # The restart's counters agree with what its tap was given, one outcome per record.
        assert run.exported_after + run.duplicates_after == run.after_restart.total(), where
        assert run.split == set(), where
        assert set(run.scored) <= everyone, where
        assert run.replayed_frames >= 1, where  # the restart did read the log
