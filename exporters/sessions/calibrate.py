"""Calibration: how far turnwatch agrees with reviewed labels, per check and per judge metric,
overall, per failure slice and per service, each figure with a 95% bootstrap interval over
sessions.

Checks, against the reference review of each session (its most recent review, or one
reviewer's): a session is a *positive* for a check when the review confirmed one of its
findings or named a missed defect of it; turnwatch *flagged* it when the check failed.
Precision and recall are over sessions; turn precision and recall over the finding turns (a
confirmed finding is a true positive, a false positive one a false positive, a missed defect at
a turn a false negative); *FP clean* is the share of clean reviewed sessions (nothing confirmed,
nothing missed, no metric labelled fail) that the check flagged. A session where the check is
unscored, or a finding of it was left unmarked and nothing settles it, is left out of that
check's figures.

Judge metrics: a session's label is fail when any of its labels for the metric is fail
(per-turn metrics are labelled per turn), pass otherwise; turnwatch predicts fail when the
judge's value is below the metric's threshold (`calibration.thresholds`, default 1.0). Cohen's
kappa and balanced accuracy over sessions, and for per-turn metrics over labelled turns as
well (a turn predicted fail when the judge flagged it); the threshold with the best kappa.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np
from pydantic import BaseModel
from turnwatch.exporters.sessions.config import CalibrationConfig
from turnwatch.exporters.sessions.model import JudgeScore, StoredSession
from turnwatch.exporters.sessions.reviews import REVIEW_SLICES, Review, Verdict
from turnwatch.exporters.sessions.stats import (
    Bootstrap,
    Interval,
    balanced_accuracy,
    best_threshold,
    kappa,
    precision,
    ratio,
    recall,
)
from turnwatch.exporters.sessions.store import judge_of

from turnwatch.scores import ScoreRecord, Status

ALL = "all"


@dataclass
class Reviewed:
    """One reviewed session revision: its score record, every judge's values, its reviews."""

    stored: StoredSession
    reviews: list[Review]
    reference: Review
    groups: list[str] = field(default_factory=list)

    @property
    def record(self) -> ScoreRecord:
        assert self.stored.score is not None
        return self.stored.score


def pick_reference(reviews: list[Review], reviewer: str | None) -> Review | None:
    chosen = [r for r in reviews if reviewer is None or r.reviewer == reviewer]
    return max(chosen, key=lambda r: (r.reviewed_at, r.reviewer)) if chosen else None


def groups_of(stored: StoredSession, reference: Review) -> list[str]:
    """`all`, the session's slices (the reviewer's tags, else turnwatch's) and its service."""
    slices = reference.slices or stored.summary.slices
    return [ALL, *(f"slice:{name}" for name in sorted(set(slices))),
            f"service:{stored.summary.service}"]  # fmt: skip


def positive(review: Review, check: str) -> bool:
    """Whether the review says the session has a defect of `check`: a finding of it confirmed,
    or a missed one named."""
    confirmed = (f.check == check and f.verdict is Verdict.CONFIRMED for f in review.findings)
    return any(confirmed) or any(m.check == check for m in review.missed)


def clean(review: Review) -> bool:
    confirmed = any(f.verdict is Verdict.CONFIRMED for f in review.findings)
    return not confirmed and not review.missed and all(m.label == "pass" for m in review.metrics)


def check_counts(item: Reviewed, check: str) -> np.ndarray | None:
    """[tp, fp, fn, tn, turn tp, turn fp, turn fn, flagged clean, clean] for one session, or
    None when the check is left out of this session's figures."""
    result = next((r for r in item.record.results() if r.check == check), None)
    if result is None or result.status is Status.UNSCORED:
        return None
    review = item.reference
    finding_turns = {f.turn_index for f in result.findings}
    unmarked = [turn for turn in finding_turns if review.verdict(check, turn) is None]
    truth = positive(review, check)
    if unmarked and not truth:
        return None
    flagged = result.status is Status.FAILED
    turns = {turn for turn in finding_turns if turn is not None}
    confirmed = {t for t in turns if review.verdict(check, t) is Verdict.CONFIRMED}
    rejected = {t for t in turns if review.verdict(check, t) is Verdict.FALSE_POSITIVE}
    missed = {m.turn_index for m in review.missed if m.check == check and m.turn_index is not None}
    is_clean = clean(review)
    return np.array([
        flagged and truth, flagged and not truth, not flagged and truth, not flagged and not truth,
        len(confirmed), len(rejected), len(missed - turns), flagged and is_clean, is_clean,
    ], dtype=float)  # fmt: skip


def session_label(review: Review, metric: str) -> bool | None:
    """True = fail, False = pass, None = not labelled."""
    labels = [m.label for m in review.metrics if m.metric == metric]
    return ("fail" in labels) if labels else None


def judge_counts(
    review: Review, score: JudgeScore, threshold: float, turns: list[int]
) -> np.ndarray | None:
    """[tp, fp, fn, tn] over the session, then over its labelled turns (fail = positive)."""
    label = session_label(review, score.metric)
    if label is None or score.value is None:
        return None
    predicted = score.value < threshold
    row = [predicted and label, predicted and not label, not predicted and label,
           not predicted and not label]  # fmt: skip
    turn_row = [0, 0, 0, 0]
    for item in review.metrics:
        if item.metric != score.metric or item.turn_index is None:
            continue
        failing, flagged = item.label == "fail", item.turn_index in turns
        turn_row[(0 if failing else 1) if flagged else (2 if failing else 3)] += 1
    return np.array([*row, *turn_row], dtype=float)


class CheckRow(BaseModel):
    check: str
    group: str
    sessions: int
    left_out: int
    positives: int
    precision: Interval
    recall: Interval
    turn_precision: Interval
    turn_recall: Interval
    false_positive_clean: Interval


class MetricRow(BaseModel):
    metric: str
    group: str
    judge: str
    sessions: int
    unscored: int
    expected_fail: int
    threshold: float
    kappa: Interval
    balanced_accuracy: Interval
    turns_labelled: int
    turn_kappa: Interval
    turn_balanced_accuracy: Interval
    best_threshold: float | None
    best_kappa: float | None


class HumanRow(BaseModel):
    name: str
    kind: str  # "check" or "metric"
    sessions: int
    kappa: Interval


class Report(BaseModel):
    reviewed_sessions: int
    reviews: int
    reviewers: list[str]
    without_session: int
    """Reviews whose session revision is not in the store, or has no score record yet."""
    checks: list[CheckRow]
    metrics: list[MetricRow]
    human: list[HumanRow]
    judges: list[MetricRow]
    """Every judge on the sessions scored by more than one, side by side (group `all`)."""
    below_minimum: list[str]


def stack(rows: list[np.ndarray], width: int) -> np.ndarray:
    return np.array(rows) if rows else np.zeros((0, width))


def check_rows(items: list[Reviewed], boot: Bootstrap) -> list[CheckRow]:
    # Checks turnwatch ran; a missed defect of anything else (a judge-only defect) only makes
    # its session not clean.
    checks = sorted({r.check for item in items for r in item.record.results()})
    rows = []
    for check in checks:
        by_group: dict[str, list[np.ndarray]] = defaultdict(list)
        left_out: dict[str, int] = defaultdict(int)
        for item in items:
            counts = check_counts(item, check)
            for group in item.groups:
                if counts is None:
                    left_out[group] += 1
                else:
                    by_group[group].append(counts)
        for group in sorted(set(by_group) | set(left_out), key=lambda g: (g != ALL, g)):
            table = stack(by_group[group], 9)
            rows.append(
                CheckRow(
                    check=check,
                    group=group,
                    sessions=table.shape[0],
                    left_out=left_out[group],
                    positives=int(table[:, 0].sum() + table[:, 2].sum()),
                    precision=boot.interval(table[:, :4], precision),
                    recall=boot.interval(table[:, :4], recall),
                    turn_precision=boot.interval(_turns(table), precision),
                    turn_recall=boot.interval(_turns(table), recall),
                    false_positive_clean=boot.interval(table[:, 7:9], ratio),
                )
            )
    return rows


def _turns(table: np.ndarray) -> np.ndarray:
    """Turn tp, fp, fn as a 2x2 table's first three cells (no true negatives at turn level)."""
    return np.column_stack([table[:, 4:7], np.zeros(table.shape[0])])


def metric_rows(
    items: list[Reviewed],
    boot: Bootstrap,
    config: CalibrationConfig,
    judges: dict[str, set[str]] | None = None,
) -> list[MetricRow]:
    """One row per (metric, group, judge). With `judges` (metric -> judges to compare), only
    group `all` and only the sessions every one of those judges scored."""
    cells: dict[tuple[str, str, str], list[tuple[np.ndarray, bool, float]]] = defaultdict(list)
    unscored: dict[tuple[str, str, str], int] = defaultdict(int)
    for item in items:
        scores = _scores(item, judges)
        for score in scores:
            threshold = config.thresholds.get(score.metric, 1.0)
            counts = judge_counts(item.reference, score, threshold, score.turns)
            groups = [ALL] if judges else item.groups
            for group in groups:
                key = (score.metric, group, score.judge)
                if counts is None:
                    unscored[key] += session_label(item.reference, score.metric) is not None
                    continue
                label = bool(session_label(item.reference, score.metric))
                cells[key].append((counts, label, float(score.value or 0.0)))
    rows = []
    for key in sorted(set(cells) | set(unscored), key=lambda k: (k[0], k[1] != ALL, k[1], k[2])):
        metric, group, judge = key
        entries = cells[key]
        table = stack([entry[0] for entry in entries], 8)
        threshold = config.thresholds.get(metric, 1.0)
        best, best_kappa = best_threshold(
            [entry[1] for entry in entries], [entry[2] for entry in entries], threshold
        )
        rows.append(
            MetricRow(
                metric=metric,
                group=group,
                judge=judge,
                sessions=table.shape[0],
                unscored=unscored[key],
                expected_fail=int(table[:, 0].sum() + table[:, 2].sum()),
                threshold=threshold,
                kappa=boot.interval(table[:, :4], kappa),
                balanced_accuracy=boot.interval(table[:, :4], balanced_accuracy),
                turns_labelled=int(table[:, 4:].sum()),
                turn_kappa=boot.interval(table[:, 4:], kappa),
                turn_balanced_accuracy=boot.interval(table[:, 4:], balanced_accuracy),
                best_threshold=best,
                best_kappa=best_kappa,
            )
        )
    return rows


def _scores(item: Reviewed, judges: dict[str, set[str]] | None) -> list[JudgeScore]:
    """The score record's own judge metrics, or (side by side) every compared judge's, only
    where all of them scored the session."""
    if judges is None:
        primary = {(m.name, judge_of(m.metadata)) for m in item.record.metrics}
        return [j for j in item.stored.judges if (j.metric, j.judge) in primary]
    chosen = []
    for metric, wanted in judges.items():
        have = [j for j in item.stored.judges if j.metric == metric and j.judge in wanted]
        if {j.judge for j in have} == wanted:
            chosen.extend(have)
    return chosen


def human_rows(items: list[Reviewed], boot: Bootstrap) -> list[HumanRow]:
    pairs = [sorted(i.reviews, key=lambda r: (r.reviewed_at, r.reviewer))[:2] for i in items
             if len({r.reviewer for r in i.reviews}) >= 2]  # fmt: skip
    checks = sorted({f.check for pair in pairs for r in pair for f in (*r.findings, *r.missed)})
    metrics = sorted({m.metric for pair in pairs for r in pair for m in r.metrics})
    rows = []
    for kind, names, rate in (("check", checks, positive), ("metric", metrics, session_label)):
        for name in names:
            table = []
            for first, second in pairs:
                a, b = rate(first, name), rate(second, name)
                if a is not None and b is not None:
                    table.append(np.array([a and b, b and not a, a and not b, not a and not b]))
            counts = stack(table, 4).astype(float)
            rows.append(HumanRow(name=name, kind=kind, sessions=len(table),
                                 kappa=boot.interval(counts, kappa)))  # fmt: skip
    return rows


def compared_judges(items: list[Reviewed]) -> dict[str, set[str]]:
    seen: dict[str, set[str]] = defaultdict(set)
    for item in items:
        for score in item.stored.judges:
            seen[score.metric].add(score.judge)
    return {metric: judges for metric, judges in seen.items() if len(judges) > 1}


def calibrate(
    stored: list[StoredSession],
    reviews: list[Review],
    config: CalibrationConfig,
    reviewer: str | None = None,
) -> Report:
    by_key: dict[tuple[str, int], list[Review]] = defaultdict(list)
    for review in reviews:
        by_key[(review.session_id, review.revision)].append(review)
    items = []
    for session in stored:
        own = by_key.get((session.summary.session_id, session.summary.revision), [])
        reference = pick_reference(own, reviewer)
        if session.score is None or reference is None:
            continue
        items.append(Reviewed(session, own, reference, groups_of(session, reference)))
    boot = Bootstrap(config.bootstrap_samples, config.seed)
    metrics = metric_rows(items, boot, config)
    below = []
    for metric, minimum in sorted(config.min_agreement.items()):
        overall = [r for r in metrics if r.metric == metric and r.group == ALL]
        if not overall or any(r.kappa.value is None or r.kappa.value < minimum for r in overall):
            below.append(metric)
    comparison = compared_judges(items)
    return Report(
        reviewed_sessions=len(items),
        reviews=len(reviews),
        reviewers=sorted({r.reviewer for r in reviews}),
        without_session=len(by_key) - len(items),
        checks=check_rows(items, boot),
        metrics=metrics,
        human=human_rows(items, boot),
        judges=metric_rows(items, boot, config, comparison) if comparison else [],
        below_minimum=below,
    )


def agreement_points(report: Report) -> dict[tuple[str, str], float]:
    """(metric, slice) -> kappa, for `turnwatch_judge_agreement`: slice `all` or one of the
    evaluation guide's slices (a slice tag imported from elsewhere gets no series)."""
    points = {}
    for row in report.metrics:
        name = row.group.removeprefix("slice:")
        if row.kappa.value is None or (name != ALL and name not in REVIEW_SLICES):
            continue
        points[(row.metric, name)] = row.kappa.value
    return points
