"""The corpus labels as reviews: what a reviewer who knew what was planted would have marked.

    python -m benchmarks.corpus.reviews --data-dir DIR [--split dev] [--seed 1] [--corpus DIR]
                                        [-o reviews.jsonl]

reads the score records of the corpus's conversations from the session store under `--data-dir`
(filled by a `turnwatch serve` the corpus was sent to, as `benchmarks/calibration.py` does) and
writes one review per matched conversation:

- each finding of a check at a turn where a defect of that check was planted is confirmed, any
  other finding of it is a false positive (a whole-session finding: confirmed when the check has
  a planted defect at all);
- each planted defect turnwatch has no finding at is a missed defect (judge-only defects too);
- judge metrics get the construction's expectation: per session for completeness and retention,
  per assistant turn for relevancy and role adherence (fail at the turns of the defects that move
  the metric, pass elsewhere); metrics whose expectation is undefined are not labelled;
- the slices are the construction's.

`turnwatch sessions import-reviews` loads the file; `turnwatch calibrate` then computes per check
the figures `benchmarks/detection.py` reports on the same records.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent))

from turnwatch.exporters.sessions.reviews import (
    PER_TURN_METRICS,
    FindingLabel,
    MetricLabel,
    MissedDefect,
    Review,
    Verdict,
    write_jsonl,
)

from benchmarks.corpus.kinds import DEFECTS, JUDGE_METRICS
from turnwatch.scores import ScoreRecord

REVIEWER = "corpus-labels"
REVIEWED_AT = datetime(2026, 12, 1, tzinfo=UTC)


def corpus_review(record: dict[str, Any], score: ScoreRecord) -> Review:
    labels = record["labels"]
    planted: dict[str, set[int]] = defaultdict(set)
    for defect in labels["defects"]:
        planted[defect["check"]].add(defect["turn_index"])
    findings, reported = [], defaultdict(set)
    for result in score.results():
        for finding in result.findings:
            turn = finding.turn_index
            hit = bool(planted[result.check]) if turn is None else turn in planted[result.check]
            verdict = Verdict.CONFIRMED if hit else Verdict.FALSE_POSITIVE
            label = FindingLabel(check=result.check, turn_index=turn, verdict=verdict)
            if label not in findings:
                findings.append(label)
            reported[result.check].add(turn)
    missed = [
        MissedDefect(check=check, turn_index=turn)
        for check, turns in sorted(planted.items())
        for turn in sorted(turns - reported[check])
    ]
    return Review(
        session_id=score.session_id,
        revision=score.revision,
        reviewer=REVIEWER,
        reviewed_at=REVIEWED_AT,
        findings=findings,
        missed=missed,
        metrics=metric_labels(record),
        slices=list(labels["slices"]),
    )


def metric_labels(record: dict[str, Any]) -> list[MetricLabel]:
    labels = record["labels"]
    assistant_turns = [turn["turn_id"] for turn in record["turns"] if turn["role"] == "assistant"]
    found = []
    for metric in JUDGE_METRICS:
        expectation = labels["judge"].get(metric, "undefined")
        if expectation == "undefined":
            continue
        if metric not in PER_TURN_METRICS:
            found.append(MetricLabel(metric=metric, turn_index=None, label=expectation))
            continue
        failing = {
            defect["turn_index"]
            for defect in labels["defects"]
            if DEFECTS[defect["kind"]].judge.get(metric) == "fail"
        }
        if expectation == "fail" and not failing & set(assistant_turns):
            found.append(MetricLabel(metric=metric, turn_index=None, label="fail"))
            continue
        for turn in assistant_turns:
            label = "fail" if turn in failing else "pass"
            found.append(MetricLabel(metric=metric, turn_index=turn, label=label))
    return found


def corpus_reviews(pairs: list[tuple[dict[str, Any], ScoreRecord]]) -> list[Review]:
    return [corpus_review(record, score) for record, score in pairs]


def main(argv: list[str] | None = None) -> int:
    from turnwatch.collector.deid.secret import SECRET_FILE_NAME
    from turnwatch.exporters.sessions.database import SqliteDatabase
    from turnwatch.exporters.sessions.store import SessionStore

    from benchmarks.detection import add_corpus_arguments, load_corpus, match

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    add_corpus_arguments(parser)
    parser.add_argument("--output", "-o", type=Path, help="file to write (default stdout)")
    parser.add_argument(
        "--secret",
        help="the server's deid.secret (default: the one it generated in --data-dir)",
    )
    args = parser.parse_args(argv)
    records, _contracts = load_corpus(args)
    store = SessionStore(SqliteDatabase(args.data_dir / "sessions.db"))
    secret = args.secret or (args.data_dir / SECRET_FILE_NAME).read_text(encoding="utf-8")
    pairs = stored_pairs(store, records, match, secret.strip())
    reviews = corpus_reviews(pairs)
    if args.output is None:
        write_jsonl(reviews, sys.stdout)
    else:
        with args.output.open("w", encoding="utf-8") as handle:
            write_jsonl(reviews, handle)
    print(f"{len(reviews)} review(s) of {len(records)} conversation(s)", file=sys.stderr)
    return 0


def stored_pairs(store: Any, records: list[dict[str, Any]], match: Any, secret: str):
    """(corpus record, stored score record) for every conversation the store holds with exactly
    the corpus's turns, matched the way the detection benchmark matches them; `secret` is the
    server's `deid.secret`, which keys the session ids."""
    from turnwatch.collector.deid.secret import session_id_key
    from turnwatch.collector.session_keys import session_id_for

    id_key = session_id_key(secret.encode())
    scores = []
    for record in records:
        service = record["emission"]["service"]
        stored = store.get(session_id_for(service, record["conversation_id"], id_key))
        if stored is not None and stored.score is not None:
            scores.append(stored.score.model_dump(mode="json"))
    pairs, _problems = match(records, scores, secret)
    return [(record, ScoreRecord.model_validate(score)) for record, score in pairs]


if __name__ == "__main__":
    sys.exit(main())
