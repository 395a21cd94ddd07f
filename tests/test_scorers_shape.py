"""One scorer shape: checks and judge metrics are both `Context -> Result` callables, and the
runner treats them alike (a value or an explicit unscored reason, an explanation, findings with
evidence, metadata; a scorer that raises is unscored and the others still run)."""

from __future__ import annotations

import pytest
from turnwatch.scorers.judge.config import JudgeConfig
from turnwatch.scorers.judge.evaluate import JudgeEvaluator
from turnwatch.scorers.scorer import (
    Context,
    Draft,
    Result,
    ScorerSpec,
    run_scorer,
    run_scorer_async,
    unscored,
)

from tests.test_judge_metrics import context, conversation
from tests.test_scorers_builders import bot, session, support_scorer, user
from turnwatch.schema import Role
from turnwatch.scores import Evidence, Level, Status


def user_turns(ctx: Context) -> Result:
    count = sum(turn.role is Role.USER for turn in ctx.session.turns)
    evidence = Evidence(measured=count, limit=1)
    findings = [Draft(0, "more than one user turn", evidence=evidence)] if count > 1 else []
    return Result(value=count, explanation=f"{count} user turns", findings=findings)


def test_a_result_is_scored_or_unscored_never_both():
    with pytest.raises(ValueError, match="neither a value nor findings"):
        Result(value=0.0, unscored_reason="judge budget spent")
    with pytest.raises(ValueError, match="neither a value nor findings"):
        Result(unscored_reason="no contract", findings=[Draft(1, "called x")])
    assert unscored("no persona", judge="heuristic") == Result(
        unscored_reason="no persona", metadata={"judge": "heuristic"}
    )


async def test_one_plain_function_serves_as_a_check_and_as_a_judge_metric():
    scorer = support_scorer(checks=["approval"])
    scorer.checks.append(ScorerSpec("user_turns", user_turns, Level.TRAJECTORY))
    scorer.judge.metrics = [ScorerSpec("user_turns", user_turns)]
    record = await scorer.score_with_judge(session(user("a"), bot("b"), user("c")))

    [check] = [result for result in record.trajectory_level if result.check == "user_turns"]
    assert (check.status, check.value) == (Status.FAILED, 2)
    [finding] = check.findings
    assert (finding.check, finding.turn_index, finding.evidence.measured) == ("user_turns", 0, 2)
    [metric] = record.metrics
    assert (metric.name, metric.value, metric.explanation) == ("user_turns", 2, "2 user turns")


async def test_a_judge_metric_that_raises_is_unscored_and_the_others_still_run():
    evaluator = JudgeEvaluator(JudgeConfig(metrics=["role_adherence"]))

    async def broken(ctx: Context) -> Result:
        raise RuntimeError("boom")

    evaluator.metrics.insert(0, ScorerSpec("turn_relevancy", broken))
    first, role = await evaluator.evaluate(context(conversation(10)))
    assert (first.name, first.value) == ("turn_relevancy", None)
    assert first.unscored_reason == "metric raised RuntimeError"
    assert first.metadata == {"judge": "heuristic"}
    assert role.name == "role_adherence" and role.value is not None


async def test_contract_checks_are_unscored_without_a_contract_whichever_way_they_run():
    spec = ScorerSpec("user_turns", user_turns, needs_contract=True)
    ctx = context(session(user("hi")), role=None)
    expected = "no contract for service 'support-bot'"
    assert run_scorer(spec, ctx).unscored_reason == expected
    assert (await run_scorer_async(spec, ctx)).unscored_reason == expected


def test_an_awaitable_scorer_cannot_run_inline():
    async def later(ctx: Context) -> Result:
        return Result(value=1.0)

    with pytest.raises(TypeError, match="run it with run_scorer_async"):
        run_scorer(ScorerSpec("later", later), context(session(user("hi"))))
