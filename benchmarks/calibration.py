"""Calibration against the labelled corpus: `turnwatch calibrate` reproduces the detection
benchmark's per-check figures, now with 95% bootstrap intervals.

    python benchmarks/calibration.py [--split dev|heldout] [--seed N] [--corpus DIR] [--limit N]
                                     [--json]

The corpus goes through a real `turnwatch serve` exactly as in `benchmarks/detection.py`; its
session store (now filled beside the record sink) is read back, the corpus labels become reviews
(`benchmarks/corpus/reviews.py`), `turnwatch sessions import-reviews` loads them and
`turnwatch calibrate --json` computes the figures. Each figure the two share is set side by
side: per deterministic check recall, FP clean, turn precision and turn recall, per judge
metric balanced accuracy (a value below 1.0 predicts a failure in both). Exit code 1 when any
pair differs by more than 1e-9.
"""

from __future__ import annotations

import argparse
import io
import json
import secrets
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from turnwatch.exporters.sessions.database import SqliteDatabase
from turnwatch.exporters.sessions.reviews import write_jsonl
from turnwatch.exporters.sessions.store import SessionStore

from benchmarks.corpus.reviews import corpus_reviews, stored_pairs
from benchmarks.detection import add_corpus_arguments, load_corpus, match, run
from benchmarks.detection_report import report
from turnwatch.app.cli import main as turnwatch

CHECK_FIGURES = {
    "recall": "recall",
    "false_positive_clean": "false_positive_clean",
    "turn_precision": "turn_precision",
    "turn_recall": "turn_recall",
}


def reproduce(records: list[dict[str, Any]], contracts: dict[str, dict]):
    """(comparison rows, calibrate's report as JSON, conversations matched, sent)."""
    with tempfile.TemporaryDirectory(prefix="tw-calibration-") as workdir:
        work = Path(workdir)
        secret = secrets.token_hex(16)
        run(records, contracts, timeout=900, secret=secret, workdir=work)
        data = work / "data"
        store = SessionStore(SqliteDatabase(data / "sessions.db"))
        pairs = stored_pairs(store, records, match, secret)
        reviews_file = work / "reviews.jsonl"
        with reviews_file.open("w", encoding="utf-8") as handle:
            write_jsonl(corpus_reviews(pairs), handle)
        _cli(["sessions", "--data-dir", str(data), "import-reviews", str(reviews_file)])
        calibrated = json.loads(_cli(["calibrate", "--data-dir", str(data), "--json"]))
        detected = report([(record, score.model_dump(mode="json")) for record, score in pairs])
    return compare(detected, calibrated), calibrated, len(pairs), len(records)


def _cli(argv: list[str]) -> str:
    out = io.StringIO()
    saved, sys.stdout = sys.stdout, out
    try:
        code = turnwatch(argv)
    finally:
        sys.stdout = saved
    if code not in (0, 1):
        raise RuntimeError(f"turnwatch {' '.join(argv[:1])} exited {code}")
    return out.getvalue()


def compare(detected: dict[str, Any], calibrated: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    checks = {row["check"]: row for row in calibrated["checks"] if row["group"] == "all"}
    for check, figures in detected["checks"].items():
        if figures["source"] != "check" or check not in checks:
            continue
        for theirs, ours in CHECK_FIGURES.items():
            rows.append(_row(check, theirs, figures[theirs], checks[check][ours]))
    metrics = {row["metric"]: row for row in calibrated["metrics"] if row["group"] == "all"}
    for metric, figures in detected["judge"].items():
        if metric in metrics:
            row = metrics[metric]["balanced_accuracy"]
            rows.append(_row(metric, "balanced_accuracy", figures["balanced_accuracy"], row))
    return rows


def _row(name: str, figure: str, detected: float | None, interval: dict) -> dict[str, Any]:
    value = interval["value"]
    same = (detected is None and value is None) or (
        detected is not None and value is not None and abs(detected - value) <= 1e-9
    )
    return {
        "name": name,
        "figure": figure,
        "detection": detected,
        "calibrate": value,
        "low": interval["low"],
        "high": interval["high"],
        "match": same,
    }


def _cell(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_corpus_arguments(parser)
    parser.add_argument("--limit", type=int, help="only the first N conversations")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    records, contracts = load_corpus(args)
    if args.limit:
        records = records[: args.limit]
    rows, calibrated, matched, total = reproduce(records, contracts)
    if args.json:
        print(json.dumps({"rows": rows, "calibrate": calibrated}, indent=2))
    else:
        print(f"{matched} of {total} conversations matched and reviewed\n")
        print("| check / metric | figure | detection | calibrate | 95% interval | match |")
        print("|---|---|---|---|---|---|")
        for row in rows:
            interval = f"[{_cell(row['low'])}, {_cell(row['high'])}]"
            print(
                f"| {row['name']} | {row['figure']} | {_cell(row['detection'])} | "
                f"{_cell(row['calibrate'])} | {interval} | {'yes' if row['match'] else 'NO'} |"
            )
    return 0 if rows and all(row["match"] for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
