"""The drift-outlier flagging rule: far below its service's baseline flags, within it does not."""

from __future__ import annotations

from datetime import UTC, datetime

from turnwatch.scorers.outliers import ScoreOutliers

from turnwatch.drift import DriftConfig
from turnwatch.scores import BudgetUsage, JointSuccess, Score, ScoreRecord

DRIFT = DriftConfig(recent_window=10, baseline_window=40, min_recent=5, min_baseline=20)


def _record(value: float | None, service: str = "support-bot") -> ScoreRecord:
    return ScoreRecord(
        session_id="s",
        revision=1,
        service=service,
        contract=None,
        scored_at=datetime.now(UTC),
        joint_success=JointSuccess(value=True, conditions={}),
        budgets=BudgetUsage(
            turns=2,
            user_turns=1,
            tool_calls=0,
            latency_ms=0,
            max_turn_latency_ms=None,
            input_tokens=0,
            output_tokens=0,
            cost_usd=None,
        ),
        metrics=[
            Score(
                name="turn_relevancy",
                value=value,
                unscored_reason=None if value is not None else "judge_unavailable",
            )
        ],
    )


def test_a_score_far_below_the_baseline_is_an_outlier_once_the_baseline_is_full():
    outliers = ScoreOutliers(DRIFT, threshold=3.0)
    assert not outliers(_record(0.0, service="quiet-bot"))
    for value in [0.9, 0.85, 0.95, 0.9] * 5:
        assert not outliers(_record(value))
    assert outliers(_record(0.1))
    assert not outliers(_record(0.86))
    assert not outliers(_record(None))


def test_baselines_are_per_service():
    outliers = ScoreOutliers(DRIFT, threshold=3.0)
    for value in [0.9, 0.85, 0.95, 0.9] * 5:
        outliers(_record(value, service="support-bot"))
    assert not outliers(_record(0.1, service="billing-bot"))
    assert outliers(_record(0.1, service="support-bot"))
