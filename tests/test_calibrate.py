"""Calibration figures: Cohen's kappa and the other 2x2 figures, bootstrap intervals over
sessions, thresholds, and `calibrate` on a store of reviewed sessions (checks, judge metrics,
human-human agreement, judges side by side, the minimum that fails the run)."""

from __future__ import annotations

import numpy as np
import pytest
from turnwatch.exporters.sessions.calibrate import agreement_points, calibrate
from turnwatch.exporters.sessions.config import CalibrationConfig
from turnwatch.exporters.sessions.database import SqliteDatabase
from turnwatch.exporters.sessions.reviews import (
    FindingLabel,
    MetricLabel,
    MissedDefect,
    Review,
    Verdict,
)
from turnwatch.exporters.sessions.stats import (
    Bootstrap,
    balanced_accuracy,
    best_threshold,
    kappa,
    precision,
)
from turnwatch.exporters.sessions.store import SessionStore

from tests.session_records import START, failing, healthy, relevancy, scored

CONFIRMED, REJECTED = Verdict.CONFIRMED, Verdict.FALSE_POSITIVE


def test_kappa_and_balanced_accuracy_from_a_two_by_two_table():
    table = np.array([20, 5, 10, 65])  # tp, fp, fn, tn
    assert float(kappa(table)) == pytest.approx(0.625)  # po 0.85, pe 0.60
    assert float(balanced_accuracy(table)) == pytest.approx((20 / 30 + 65 / 70) / 2)
    assert np.isnan(kappa(np.array([0, 0, 0, 5])))  # one label only: undefined, not 0 or 1


def test_the_bootstrap_resamples_sessions_not_turns():
    # Two sessions of 40 turns each: one all right, one all wrong. Over 80 independent turns the
    # interval would be narrow; over two sessions it spans everything a resample can give.
    sessions = np.array([[40, 0, 0, 0], [0, 40, 0, 0]], dtype=float)
    interval = Bootstrap(1000, seed=3).interval(sessions, precision)
    assert interval.value == 0.5
    assert (interval.low, interval.high) == (0.0, 1.0)
    again = Bootstrap(1000, seed=3).interval(sessions, precision)
    assert again == interval  # seeded: the same figures every run


def test_the_best_threshold_is_the_one_that_agrees_best():
    labels = [True, True, False, False, False]
    values = [0.2, 0.5, 0.7, 0.9, 1.0]
    threshold, agreement = best_threshold(labels, values, default=1.0)
    assert agreement == pytest.approx(1.0)
    assert 0.5 < threshold <= 0.7
    assert best_threshold([], [], 1.0) == (None, None)


def review(session_id: str, reviewer: str, minute: int = 0, **fields) -> Review:
    return Review(
        session_id=session_id,
        revision=1,
        reviewer=reviewer,
        reviewed_at=START.replace(minute=minute),
        **fields,
    )


@pytest.fixture
def store(tmp_path) -> SessionStore:
    store = SessionStore(SqliteDatabase(tmp_path / "sessions.db"))
    for name in ("bad-1", "bad-2"):
        session = failing(name)
        store.put_session(session)
        store.put_score(scored(session, [relevancy(0.5, turns=(2,))]))
    for name in ("good-1", "good-2"):
        session = healthy(name)
        store.put_session(session)
        store.put_score(scored(session, [relevancy(1.0)]))
    fine = [FindingLabel(check="outcome", turn_index=2, verdict=CONFIRMED)]
    labels = [
        review("bad-1", "ana", findings=[
            FindingLabel(check="forbidden_action", turn_index=1, verdict=CONFIRMED),
            FindingLabel(check="approval", turn_index=1, verdict=REJECTED), *fine,
        ], metrics=[MetricLabel(metric="turn_relevancy", turn_index=2, label="fail")]),
        review("bad-2", "ana", findings=[
            FindingLabel(check="forbidden_action", turn_index=1, verdict=CONFIRMED),
            FindingLabel(check="approval", turn_index=1, verdict=CONFIRMED), *fine,
        ], metrics=[MetricLabel(metric="turn_relevancy", turn_index=2, label="pass")]),
        review("good-1", "ana", missed=[MissedDefect(check="approval", turn_index=1)],
               metrics=[MetricLabel(metric="turn_relevancy", turn_index=1, label="pass")]),
        review("good-2", "ana", metrics=[
            MetricLabel(metric="turn_relevancy", turn_index=None, label="pass")]),
        review("good-2", "bo", minute=5, missed=[MissedDefect(check="approval", turn_index=3)],
               metrics=[MetricLabel(metric="turn_relevancy", turn_index=None, label="fail")]),
    ]  # fmt: skip
    for item in labels:
        store.put_review(item)
    return store


def run(store: SessionStore, **config) -> object:
    reviews = store.reviews()
    keys = sorted({(r.session_id, r.revision) for r in reviews})
    stored = [store.get(*key) for key in keys]
    return calibrate(stored, reviews, CalibrationConfig.model_validate(config))


def test_check_figures_against_the_reference_reviews(store):
    report = run(store)
    rows = {(row.check, row.group): row for row in report.checks}
    approval = rows[("approval", "all")]
    # Flagged in bad-1 (false positive) and bad-2 (confirmed); missed in good-1 and in good-2
    # (bo's review, the most recent, is good-2's reference).
    assert (approval.sessions, approval.positives) == (4, 3)
    assert approval.precision.value == pytest.approx(1 / 2)
    assert approval.recall.value == pytest.approx(1 / 3)
    assert approval.turn_precision.value == pytest.approx(1 / 2)
    assert approval.turn_recall.value == pytest.approx(1 / 3)
    assert approval.recall.low <= approval.recall.value <= approval.recall.high
    forbidden = rows[("forbidden_action", "all")]
    assert (forbidden.precision.value, forbidden.recall.value) == (1.0, 1.0)
    assert forbidden.false_positive_clean.value is None  # no clean session left
    assert ("approval", "service:support-bot") in rows
    assert report.reviewed_sessions == 4 and report.reviewers == ["ana", "bo"]


def test_judge_metric_agreement_human_agreement_and_the_minimum(store):
    report = run(store, min_agreement={"turn_relevancy": 0.9})
    [overall] = [row for row in report.metrics if row.group == "all"]
    # Sessions: bad-1 fail/predicted fail, bad-2 pass/predicted fail, good-1 pass/pass,
    # good-2 fail (bo)/pass.
    assert overall.sessions == 4 and overall.expected_fail == 2
    assert overall.kappa.value == pytest.approx(0.0)
    assert overall.balanced_accuracy.value == pytest.approx(0.5)
    assert overall.turns_labelled == 3  # per-turn labels only
    assert report.below_minimum == ["turn_relevancy"]
    assert agreement_points(report)[("turn_relevancy", "all")] == pytest.approx(0.0)
    human = {(row.kind, row.name): row for row in report.human}
    assert human[("metric", "turn_relevancy")].sessions == 1
    assert human[("check", "approval")].sessions == 1
    as_ana = calibrate(
        [store.get("good-2")], store.reviews("good-2"), CalibrationConfig(), reviewer="ana"
    )
    assert [row.expected_fail for row in as_ana.metrics if row.group == "all"] == [0]


def test_judges_side_by_side_on_the_sessions_both_scored(store):
    for name in ("bad-1", "good-1"):
        stored = store.get(name)
        late = stored.score.model_copy(deep=True)
        late.scored_at = late.scored_at.replace(year=late.scored_at.year + 1)
        late.metrics = [relevancy(1.0 if name == "bad-1" else 0.4, judge="endpoint")]
        store.put_score(late)
    report = run(store)
    side = {row.judge: row for row in report.judges}
    assert set(side) == {"heuristic", "endpoint"}
    assert side["heuristic"].sessions == side["endpoint"].sessions == 2
    assert side["heuristic"].balanced_accuracy.value == pytest.approx(1.0)
    assert side["endpoint"].balanced_accuracy.value == pytest.approx(0.0)
