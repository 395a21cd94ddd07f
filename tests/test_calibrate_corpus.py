"""The done-when of calibration: the labelled corpus, sent through a real `turnwatch serve`,
stored, turned into reviews and loaded with `turnwatch sessions import-reviews`, gives from
`turnwatch calibrate` exactly the detection benchmark's per-check figures on the same score
records, each with a 95% interval that contains it. `benchmarks/calibration.py` runs the same
on a whole split."""

from __future__ import annotations

import pytest
from turnwatch.exporters.sessions.reviews import Verdict

from benchmarks.calibration import reproduce
from benchmarks.corpus import DEFAULT_COUNT, make_corpus
from benchmarks.corpus.reviews import corpus_review
from tests.session_records import failing, scored


def test_a_planted_defect_confirms_the_finding_at_its_turn_and_other_findings_are_rejected():
    session = failing("c-1")
    record = {
        "labels": {
            "defects": [{"kind": "forbidden_action", "check": "forbidden_action", "turn_index": 1},
                        {"kind": "approval.tool_missing", "check": "approval", "turn_index": 2}],
            "judge": {"turn_relevancy": "pass", "conversation_completeness": "undefined"},
            "slices": ["tool-failure"],
        },
        "turns": [{"turn_id": i, "role": r} for i, r in enumerate(("user", *["assistant"] * 2))],
    }  # fmt: skip
    review = corpus_review(record, scored(session))
    assert review.verdict("forbidden_action", 1) is Verdict.CONFIRMED
    assert review.verdict("approval", 1) is Verdict.FALSE_POSITIVE  # planted at turn 2
    assert review.verdict("outcome", 2) is Verdict.FALSE_POSITIVE
    assert [(m.check, m.turn_index) for m in review.missed] == [("approval", 2)]
    assert {(m.metric, m.turn_index, m.label) for m in review.metrics} == {
        ("turn_relevancy", 1, "pass"),
        ("turn_relevancy", 2, "pass"),
    }
    assert review.slices == ["tool-failure"]


@pytest.mark.slow
def test_calibrate_reproduces_the_detection_figures_on_the_corpus():
    corpus = make_corpus(1, "dev", DEFAULT_COUNT)
    rows, calibrated, matched, total = reproduce(corpus.records[:60], corpus.contracts())
    assert matched == total == 60
    assert len({row["name"] for row in rows}) >= 10  # every deterministic check and judge metric
    mismatched = [row for row in rows if not row["match"]]
    assert mismatched == []
    for row in rows:
        if row["calibrate"] is not None and row["low"] is not None:
            assert row["low"] - 1e-9 <= row["calibrate"] <= row["high"] + 1e-9
    assert calibrated["reviewed_sessions"] == 60 and calibrated["reviewers"] == ["corpus-labels"]
