"""Issue 17's hostile inputs against a real `turnwatch serve` subprocess: benchmarks/faults.py's
registry, run for the ingest cases (1, 2, 8-12), each row held to its expected outcome.

What the table reports as figures is held here to its bounds: no `/healthz` poll (every 20 ms,
from another process) goes unanswered for 10 s while a fault runs, and no request the cases
send, hostile or of the largest size the caps let through, raises the server's peak RSS by
MEMORY_BOUND_MIB (one 3 MB body took it to 1.7 GB before the caps). The latencies themselves
are the benchmark's to print, not asserted.
"""

from __future__ import annotations

import pytest

from benchmarks.faults import FAULTS, MEMORY_BOUND_MIB, run_faults

pytestmark = pytest.mark.slow  # turnwatch serve subprocesses and 64 MiB bodies

INGEST_CASES = {"1", "2", "8", "9", "10", "11", "12"}


def test_issue_17_ingest_faults_have_their_expected_outcomes_within_bounds():
    rows = run_faults([item.name for item in FAULTS if item.case in INGEST_CASES])
    assert {row.fault.case for row in rows} == INGEST_CASES
    unexpected = [(row.fault.name, row.outcome.text) for row in rows if not row.outcome.expected]
    assert unexpected == []
    assert [(row.fault.name, row.missed_healthz) for row in rows if row.missed_healthz] == []
    heavy = [row for row in rows if row.fault.case == "2"]
    assert len(heavy) >= 6 and any(row.fault.max_request for row in heavy)
    too_big = [(row.fault.name, round(row.peak_growth_mib)) for row in heavy]
    assert [item for item in too_big if item[1] >= MEMORY_BOUND_MIB] == []
