"""`turnwatch calibrate`: agreement between reviewed labels and turnwatch (see
`exporters/sessions/calibrate.py` for every definition).

Prints a table (`--by slice` / `--by service` adds those groups; `--json` prints everything),
writes `turnwatch_judge_agreement{metric,slice}` gauges in Prometheus text format with
`--prometheus FILE` (for node_exporter's textfile collector or a Pushgateway). Exit codes: 0
fine, 1 a judge metric's kappa is below `calibration.min_agreement` (or `--min-agreement`),
2 usage, configuration or input error.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, TextIO

from prometheus_client import CollectorRegistry, write_to_textfile

from turnwatch.app.sessions import add_store_location, store_command
from turnwatch.exporters.sessions.calibrate import ALL, Report, agreement_points, calibrate
from turnwatch.exporters.sessions.metrics import AgreementMetrics
from turnwatch.exporters.sessions.reviews import BadReviewLine, read_jsonl
from turnwatch.exporters.sessions.store import SessionStore

COMMAND = "calibrate"


def add_calibrate_parser(subparsers: Any) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        COMMAND, help="agreement of checks and judge metrics with reviewed labels"
    )
    add_store_location(parser)
    parser.add_argument("--reviews", type=Path, help="JSONL reviews to use instead of stored ones")
    parser.add_argument("--reviewer", help="use this reviewer's labels as the reference")
    parser.add_argument(
        "--by", choices=["slice", "service"], action="append", default=[],
        help="also print figures per failure slice or per service (repeatable)",
    )  # fmt: skip
    parser.add_argument("--json", action="store_true", help="print the whole report as JSON")
    parser.add_argument("--prometheus", type=Path, help="write agreement gauges to this file")
    parser.add_argument(
        "--min-agreement", action="append", default=[], metavar="METRIC=KAPPA",
        help="minimum Cohen's kappa for a judge metric (beats calibration.min_agreement)",
    )  # fmt: skip
    parser.add_argument("--bootstrap", type=int, help="bootstrap resamples (default 1000)")
    return parser


def _minimums(values: list[str]) -> dict[str, float]:
    minimums = {}
    for value in values:
        metric, sep, number = value.partition("=")
        try:
            minimums[metric] = float(number)
        except ValueError:
            sep = ""
        if not sep or not metric:
            raise ValueError(f"--min-agreement {value!r}: expected METRIC=KAPPA")
    return minimums


@store_command
def run_calibrate(args, settings, store: SessionStore, out: TextIO, err: TextIO) -> int:
    try:
        minimums = _minimums(args.min_agreement)
        if args.reviews is not None:
            with args.reviews.open(encoding="utf-8") as handle:
                reviews = read_jsonl(handle)
        else:
            reviews = store.reviews()
    except (ValueError, OSError, BadReviewLine) as exc:
        print(f"turnwatch: {exc}", file=err)
        return 2
    config = settings.calibration
    update: dict[str, Any] = {"min_agreement": {**config.min_agreement, **minimums}}
    if args.bootstrap is not None:
        update["bootstrap_samples"] = max(100, args.bootstrap)
    config = config.model_copy(update=update)
    keys = sorted({(review.session_id, review.revision) for review in reviews})
    stored = [found for key in keys if (found := store.get(*key)) is not None]
    report = calibrate(stored, reviews, config, args.reviewer)
    if args.prometheus is not None:
        write_gauges(report, args.prometheus)
    if args.json:
        print(report.model_dump_json(indent=2), file=out)
    else:
        out.write(render_table(report, {"all", *args.by}))
    for metric in report.below_minimum:
        print(
            f"turnwatch: {metric}: agreement below the minimum "
            f"{config.min_agreement[metric]:.2f} (or not measurable)",
            file=err,
        )
    return 1 if report.below_minimum else 0


def write_gauges(report: Report, path: Path) -> None:
    registry = CollectorRegistry()
    gauge = AgreementMetrics(registry).agreement
    for (metric, slice_name), value in sorted(agreement_points(report).items()):
        gauge.labels(metric, slice_name).set(value)
    write_to_textfile(str(path), registry)


def _shown(group: str, kinds: set[str]) -> bool:
    return group == ALL or group.split(":", 1)[0] in kinds


def render_table(report: Report, kinds: set[str]) -> str:
    lines = [
        f"{report.reviewed_sessions} reviewed session(s), {report.reviews} review(s) by "
        f"{len(report.reviewers)} reviewer(s); {report.without_session} review(s) without a "
        "scored session in the store. Figures with 95% bootstrap intervals over sessions.",
        "",
        "| check | group | sessions | positives | precision | recall | turn precision | "
        "turn recall | FP clean | left out |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in report.checks:
        if not _shown(row.group, kinds) or (row.sessions == 0 and row.group != ALL):
            continue
        cells = [row.check, row.group, row.sessions, row.positives, row.precision.text(),
                 row.recall.text(), row.turn_precision.text(), row.turn_recall.text(),
                 row.false_positive_clean.text(), row.left_out]  # fmt: skip
        lines.append("| " + " | ".join(str(cell) for cell in cells) + " |")
    lines += [
        "",
        "| judge metric | group | judge | sessions | expected fail | kappa | balanced accuracy | "
        "turns | turn kappa | threshold | best threshold (kappa) | unscored |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in report.metrics:
        if _shown(row.group, kinds):
            lines.append(_metric_line(row))
    if report.judges:
        lines += ["", "Judges side by side, on the sessions every one of them scored:", ""]
        lines += [_metric_line(row) for row in report.judges]
    if report.human:
        lines += ["", "| human-human | kind | sessions | kappa |", "|---|---|---|---|"]
        for human in report.human:
            lines.append(
                f"| {human.name} | {human.kind} | {human.sessions} | {human.kappa.text()} |"
            )
    return "\n".join(lines) + "\n"


def _metric_line(row: Any) -> str:
    best = "-" if row.best_threshold is None else f"{row.best_threshold:.3f} ({row.best_kappa:.2f})"
    cells = [row.metric, row.group, row.judge, row.sessions, row.expected_fail, row.kappa.text(),
             row.balanced_accuracy.text(), row.turns_labelled, row.turn_kappa.text(),
             f"{row.threshold:.2f}", best, row.unscored]  # fmt: skip
    return "| " + " | ".join(str(cell) for cell in cells) + " |"
