"""Detection figures: score records set against the corpus labels.

A check "flags" a conversation when its result failed (any finding, any severity). A label
whose check is not one of the record's deterministic checks is read from the judge metric of
that name (value below 1.0 flags; turns from the metric's `*_turns` metadata), so persona,
relevancy and completeness defects are measured on whatever turnwatch reports for them today.

- recall: labelled conversations flagged; turn recall: defect turns with a finding of that check
  on that exact turn; turn precision: findings of the check that sit on a labelled turn;
- false positives: clean conversations (no defect at all) flagged, and conversations carrying a
  near miss of the check (and no defect of it) flagged;
- joint success: agreement with the construction, over all conversations (unscored counts as
  disagreement) and over the scored ones;
- first broken transition: exact turn (and exact turn and check) on conversations whose
  earliest defect is one a deterministic check is meant to see;
- judge metrics: balanced accuracy (predicted failure = value below 1.0) and AUC (score =
  1 - value) on the conversations whose expectation the construction defines.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

JUDGE_METRICS = (
    "turn_relevancy",
    "role_adherence",
    "knowledge_retention",
    "conversation_completeness",
)


@dataclass
class Signal:
    """What a record says about one check: flagged or not, the turns, or no signal."""

    source: str  # "check", "judge" or "absent"
    flagged: bool = False
    unscored: bool = False
    turns: set[int] = field(default_factory=set)


def signal(record: dict[str, Any], check: str) -> Signal:
    for result in (*record["turn_level"], *record["trajectory_level"], *record["session_level"]):
        if result["check"] == check:
            turns = {f["turn_index"] for f in result["findings"] if f["turn_index"] is not None}
            return Signal(
                "check",
                flagged=result["status"] == "failed",
                unscored=result["status"] == "unscored",
                turns=turns,
            )
    for score in record.get("metrics", []):
        if score["name"] == check:
            if score["value"] is None:
                return Signal("judge", unscored=True)
            turns = {
                turn
                for key, value in score.get("metadata", {}).items()
                if key.endswith("_turns") and isinstance(value, list)
                for turn in value
                if isinstance(turn, int)
            }
            return Signal("judge", flagged=score["value"] < 1.0, turns=turns)
    return Signal("absent")


def _ratio(numerator: int, denominator: int) -> float | None:
    return numerator / denominator if denominator else None


def auc(positives: list[float], negatives: list[float]) -> float | None:
    """Probability that a random positive scores above a random negative (ties count half)."""
    if not positives or not negatives:
        return None
    wins = sum((p > n) + 0.5 * (p == n) for p in positives for n in negatives)
    return wins / (len(positives) * len(negatives))


def check_table(pairs: list[tuple[dict, dict]]) -> dict[str, dict[str, Any]]:
    checks = sorted(
        {
            label["check"]
            for corpus, _ in pairs
            for label in (*corpus["labels"]["defects"], *corpus["labels"]["near_misses"])
        }
    )
    table = {}
    for check in checks:
        row: dict[str, Any] = defaultdict(int)
        sources = set()
        for corpus, record in pairs:
            labels = corpus["labels"]
            found = signal(record, check)
            sources.add(found.source)
            defect_turns = {d["turn_index"] for d in labels["defects"] if d["check"] == check}
            near = [n for n in labels["near_misses"] if n["check"] == check]
            row["unscored"] += found.unscored
            if defect_turns:
                row["positives"] += 1
                row["found"] += found.flagged
                row["defect_turns"] += len(defect_turns)
                row["turns_found"] += len(defect_turns & found.turns)
            elif near:
                row["near_miss_conversations"] += 1
                row["near_miss_flagged"] += found.flagged
            if labels["clean"]:
                row["clean"] += 1
                row["clean_flagged"] += found.flagged
            row["findings"] += len(found.turns)
            row["findings_on_label"] += len(found.turns & defect_turns)
        table[check] = {
            "source": "/".join(sorted(sources)),
            "positives": row["positives"],
            "recall": _ratio(row["found"], row["positives"]),
            "false_positive_clean": _ratio(row["clean_flagged"], row["clean"]),
            "false_positive_near_miss": _ratio(
                row["near_miss_flagged"], row["near_miss_conversations"]
            ),
            "turn_precision": _ratio(row["findings_on_label"], row["findings"]),
            "turn_recall": _ratio(row["turns_found"], row["defect_turns"]),
            "unscored": row["unscored"],
        }
    return table


def kind_table(pairs: list[tuple[dict, dict]]) -> dict[str, dict[str, Any]]:
    """Per label kind. A near miss counts as flagged only in conversations without a defect of
    its check (where a flag can only come from the near miss or a false alarm)."""
    rows: dict[str, dict[str, Any]] = defaultdict(lambda: defaultdict(int))
    for corpus, record in pairs:
        labels = corpus["labels"]
        defect_checks = {d["check"] for d in labels["defects"]}
        planted = [(label, True) for label in labels["defects"]]
        planted += [(label, False) for label in labels["near_misses"]]
        for label, is_defect in planted:
            found = signal(record, label["check"])
            row = rows[label["kind"]]
            row["check"], row["defect"] = label["check"], is_defect
            row["count"] += 1
            row["at_turn"] += label["turn_index"] in found.turns
            if is_defect or label["check"] not in defect_checks:
                row["base"] += 1
                row["flagged"] += found.flagged
    return {
        kind: {
            "check": row["check"],
            "label": "defect" if row["defect"] else "near miss",
            "count": row["count"],
            "flagged": _ratio(row["flagged"], row["base"]),
            "at_turn": _ratio(row["at_turn"], row["count"]),
        }
        for kind, row in sorted(rows.items())
    }


def outcome_figures(pairs: list[tuple[dict, dict]]) -> dict[str, Any]:
    total = len(pairs)
    scored = agree = 0
    failed = exact = exact_check = 0
    by_outcome: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for corpus, record in pairs:
        labels = corpus["labels"]
        value = record["joint_success"]["value"]
        expected = labels["expected_joint_success"]
        by_outcome[labels["outcome"]][1] += 1
        if value is not None:
            scored += 1
            agree += value == expected
            by_outcome[labels["outcome"]][0] += value == expected
        first = labels["expected_first_broken_transition"]
        if first is not None:
            failed += 1
            got = record.get("first_broken_transition")
            if got is not None and got["turn_index"] == first["turn_index"]:
                exact += 1
                exact_check += got["check"] == first["check"]
    return {
        "conversations": total,
        "joint_success_unscored": _ratio(total - scored, total),
        "joint_success_agreement": _ratio(agree, total),
        "joint_success_agreement_scored": _ratio(agree, scored),
        "joint_success_agreement_by_outcome": {
            outcome: _ratio(hits, count) for outcome, (hits, count) in sorted(by_outcome.items())
        },
        "first_broken_conversations": failed,
        "first_broken_exact_turn": _ratio(exact, failed),
        "first_broken_exact_turn_and_check": _ratio(exact_check, failed),
    }


def judge_table(pairs: list[tuple[dict, dict]]) -> dict[str, dict[str, Any]]:
    table = {}
    for metric in JUDGE_METRICS:
        fail_scores: list[float] = []
        pass_scores: list[float] = []
        unscored = defined = 0
        for corpus, record in pairs:
            expectation = corpus["labels"]["judge"].get(metric, "undefined")
            if expectation == "undefined":
                continue
            defined += 1
            score = next((s for s in record.get("metrics", []) if s["name"] == metric), None)
            if score is None or score["value"] is None:
                unscored += 1
                continue
            (fail_scores if expectation == "fail" else pass_scores).append(1.0 - score["value"])
        true_positive = sum(s > 0 for s in fail_scores)
        true_negative = sum(s == 0 for s in pass_scores)
        sensitivity = _ratio(true_positive, len(fail_scores))
        specificity = _ratio(true_negative, len(pass_scores))
        balanced = (
            (sensitivity + specificity) / 2
            if sensitivity is not None and specificity is not None
            else None
        )
        table[metric] = {
            "expected_fail": len(fail_scores),
            "expected_pass": len(pass_scores),
            "unscored": _ratio(unscored, defined),
            "balanced_accuracy": balanced,
            "auc": auc(fail_scores, pass_scores),
            "scores_seen": sorted({round(1 - s, 3) for s in fail_scores + pass_scores})[:8],
        }
    return table


def report(pairs: list[tuple[dict, dict]]) -> dict[str, Any]:
    return {
        "checks": check_table(pairs),
        "kinds": kind_table(pairs),
        "outcome": outcome_figures(pairs),
        "judge": judge_table(pairs),
    }


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


def _outcome_cell(value: Any) -> str:
    if isinstance(value, dict):
        return ", ".join(f"{key} {_cell(item)}" for key, item in value.items())
    return _cell(value)


def markdown(figures: dict[str, Any]) -> str:
    lines = [
        "| check | source | positives | recall | FP clean | FP near miss | turn precision | "
        "turn recall | unscored |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for check, row in figures["checks"].items():
        cells = [check, *(row[key] for key in list(row))]
        lines.append("| " + " | ".join(_cell(cell) for cell in cells) + " |")
    lines += [
        "",
        "| label kind | check | label | count | flagged | at turn |",
        "|---|---|---|---|---|---|",
    ]
    for kind, row in figures["kinds"].items():
        cells = [kind, row["check"], row["label"], row["count"], row["flagged"], row["at_turn"]]
        lines.append("| " + " | ".join(_cell(cell) for cell in cells) + " |")
    outcome = figures["outcome"]
    lines += [
        "",
        "| outcome figure | value |",
        "|---|---|",
        *(f"| {key} | {_outcome_cell(value)} |" for key, value in outcome.items()),
        "",
        "| judge metric (heuristic) | expected fail | expected pass | unscored | "
        "balanced accuracy | AUC |",
        "|---|---|---|---|---|---|",
    ]
    for metric, row in figures["judge"].items():
        cells = [metric, row["expected_fail"], row["expected_pass"], row["unscored"]]
        cells += [row["balanced_accuracy"], row["auc"]]
        lines.append("| " + " | ".join(_cell(cell) for cell in cells) + " |")
    return "\n".join(lines)
