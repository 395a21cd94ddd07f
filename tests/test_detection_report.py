"""The detection benchmark's arithmetic (benchmarks/detection_report.py) and its matching of
score records to corpus conversations (benchmarks/detection.py), on hand-made records."""

from __future__ import annotations

import pytest
from turnwatch.collector.deid.secret import session_id_key
from turnwatch.collector.session_keys import session_id_for

from benchmarks.corpus.generate import main as generate_main
from benchmarks.detection import main as detection_main
from benchmarks.detection import match
from benchmarks.detection_report import auc, check_table, judge_table, kind_table, report


def _record(check_findings: dict[str, list[int]], metrics: dict[str, float] | None = None):
    results = [
        {
            "check": check,
            "status": "failed" if turns else "passed",
            "findings": [{"turn_index": turn} for turn in turns],
        }
        for check, turns in check_findings.items()
    ]
    return {
        "turn_level": results,
        "trajectory_level": [],
        "session_level": [],
        "metrics": [
            {"name": name, "value": value, "metadata": {}}
            for name, value in (metrics or {}).items()
        ],
        "joint_success": {"value": True},
        "first_broken_transition": None,
    }


def _corpus(defects=(), near_misses=(), judge=None):
    return {
        "labels": {
            "defects": [{"kind": k, "check": c, "turn_index": t} for k, c, t in defects],
            "near_misses": [{"kind": k, "check": c, "turn_index": t} for k, c, t in near_misses],
            "clean": not defects,
            "judge": judge or {},
            "outcome": "resolved",
            "expected_joint_success": not defects,
            "expected_first_broken_transition": (
                {"turn_index": defects[0][2], "check": defects[0][1]} if defects else None
            ),
        }
    }


def test_auc_is_the_share_of_positive_negative_pairs_ranked_right():
    assert auc([0.9, 0.8], [0.1, 0.8]) == pytest.approx(0.875)
    assert auc([], [0.1]) is None


def test_recall_false_positives_and_turn_figures_per_check():
    pairs = [
        (_corpus(defects=[("tool_loop", "tool_loop", 5)]), _record({"tool_loop": [5, 9]})),
        (_corpus(defects=[("tool_loop", "tool_loop", 4)]), _record({"tool_loop": []})),
        (_corpus(near_misses=[("loop.retry", "tool_loop", 3)]), _record({"tool_loop": [3]})),
        (_corpus(), _record({"tool_loop": []})),
    ]
    row = check_table(pairs)["tool_loop"]
    assert row["positives"] == 2 and row["recall"] == 0.5
    assert row["false_positive_clean"] == 0.5  # the near-miss conversation is clean too
    assert row["false_positive_near_miss"] == 1.0
    assert row["turn_recall"] == 0.5
    assert row["turn_precision"] == pytest.approx(1 / 3)
    kinds = kind_table(pairs)
    assert kinds["loop.retry"] == {
        "check": "tool_loop",
        "label": "near miss",
        "count": 1,
        "flagged": 1.0,
        "at_turn": 1.0,
    }


def test_a_label_without_a_deterministic_check_is_read_from_the_judge_metric():
    pairs = [
        (
            _corpus(
                defects=[("irrelevant_answer", "turn_relevancy", 3)],
                judge={"turn_relevancy": "fail"},
            ),
            _record({}, {"turn_relevancy": 0.5}),
        ),
        (_corpus(judge={"turn_relevancy": "pass"}), _record({}, {"turn_relevancy": 1.0})),
        (_corpus(judge={"turn_relevancy": "pass"}), _record({}, {"turn_relevancy": 0.75})),
    ]
    row = check_table(pairs)["turn_relevancy"]
    assert row["source"] == "judge" and row["recall"] == 1.0
    judged = judge_table(pairs)["turn_relevancy"]
    assert judged["balanced_accuracy"] == pytest.approx(0.75)
    assert judged["auc"] == 1.0
    figures = report(pairs)["outcome"]
    assert figures["first_broken_conversations"] == 1 and figures["first_broken_exact_turn"] == 0


def test_score_records_match_their_conversation_only_with_the_same_turns():
    corpus = [
        {"conversation_id": key, "turns": [{}] * turns, "emission": {"service": "shop-bot"}}
        for key, turns in [("a", 4), ("b", 6), ("c", 4)]
    ]
    secret = "detection-secret-0123456789"
    key = session_id_key(secret.encode())
    scores = [
        {
            "session_id": session_id_for("shop-bot", "a", key),
            "revision": 1,
            "budgets": {"turns": 2},
        },
        {
            "session_id": session_id_for("shop-bot", "a", key),
            "revision": 2,
            "budgets": {"turns": 4},
        },
        {
            "session_id": session_id_for("shop-bot", "b", key),
            "revision": 1,
            "budgets": {"turns": 5},
        },
        {
            "session_id": session_id_for("shop-bot", "zzz", key),
            "revision": 1,
            "budgets": {"turns": 5},
        },
    ]
    # Under another deployment's key the same conversations are other sessions.
    assert match(corpus, scores, "another-secret-0123456789")[0] == []
    pairs, problems = match(corpus, scores, secret)
    assert [record["conversation_id"] for record, _ in pairs] == ["a"]
    assert pairs[0][1]["revision"] == 2
    assert problems == {"missing": 1, "turns_differ": 1, "unexpected": 1}


def test_bad_arguments_are_refused_with_a_message(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        detection_main(["--corpus", str(tmp_path)])
    assert exit_.value.code == 2
    assert "no conversations.jsonl" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_:
        generate_main(["--count", "20", "--out", str(tmp_path / "small")])
    assert exit_.value.code == 2
    assert "too few" in capsys.readouterr().err
    assert not (tmp_path / "small").exists()
