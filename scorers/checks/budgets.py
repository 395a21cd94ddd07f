"""Trajectory level: turns, latency, tokens and cost against the contract's budgets.

Each budget reports the turn at which it was crossed, so a blown budget can be the first broken
transition. Cost needs a price for every model that reported usage; a missing price makes the cost
unscored (with the model named), never zero.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from turnwatch.scorers.config import ModelPrice
from turnwatch.scorers.scorer import Context, Draft, Result, unscored

from turnwatch.schema import Role, Session, Turn
from turnwatch.scores import BudgetUsage, Evidence, Severity

_PER_MILLION = 1_000_000


def _latency(turn: Turn) -> float:
    return (turn.latency_ms or 0.0) + sum(call.duration_ms or 0.0 for call in turn.tool_calls)


def _tokens(turn: Turn) -> int:
    usage = turn.usage
    return 0 if usage is None else (usage.input_tokens or 0) + (usage.output_tokens or 0)


def _cost(turn: Turn, prices: dict[str, ModelPrice]) -> float | str:
    """The turn's cost in USD, or why it cannot be priced."""
    usage = turn.usage
    if usage is None or (not usage.input_tokens and not usage.output_tokens):
        return 0.0
    if turn.model is None:
        return f"turn {turn.index} reports token usage without a model"
    price = prices.get(turn.model)
    if price is None:
        return f"no price configured for model {turn.model!r}"
    return (
        (usage.input_tokens or 0) * price.input_per_million_usd
        + (usage.output_tokens or 0) * price.output_per_million_usd
    ) / _PER_MILLION


def measure(session: Session, prices: dict[str, ModelPrice]) -> BudgetUsage:
    latencies = [turn.latency_ms for turn in session.turns if turn.latency_ms is not None]
    cost: float | None = 0.0
    reason = None
    for turn in session.turns:
        turn_cost = _cost(turn, prices)
        if isinstance(turn_cost, str):
            cost, reason = None, turn_cost
            break
        cost += turn_cost
    return BudgetUsage(
        turns=len(session.turns),
        user_turns=sum(turn.role is Role.USER for turn in session.turns),
        tool_calls=sum(len(turn.tool_calls) for turn in session.turns),
        latency_ms=sum(_latency(turn) for turn in session.turns),
        max_turn_latency_ms=max(latencies, default=None),
        input_tokens=sum((t.usage.input_tokens or 0) for t in session.turns if t.usage),
        output_tokens=sum((t.usage.output_tokens or 0) for t in session.turns if t.usage),
        cost_usd=cost,
        cost_unscored_reason=reason,
    )


def _crossing(
    turns: Iterable[Turn], amount: Callable[[Turn], float], limit: float
) -> tuple[int, float] | None:
    """The first turn at which the running total passes the limit, with the final total."""
    total, crossed = 0.0, None
    for turn in turns:
        total += amount(turn)
        if crossed is None and total > limit:
            crossed = turn.index
    return None if crossed is None else (crossed, total)


def _budget(ctx: Context, field: str) -> float | None:
    assert ctx.contract is not None
    return getattr(ctx.contract.budgets, field)


def _over(turn_index: int, explanation: str, field: str, measured: float, limit: float) -> Draft:
    evidence = Evidence(rule=f"budgets.{field}", measured=measured, limit=limit)
    return Draft(turn_index, explanation, Severity.WARNING, evidence)


def turn_budget(ctx: Context) -> Result:
    limit = _budget(ctx, "max_user_turns")
    if limit is None:
        return unscored("contract sets no budgets.max_user_turns")
    user_turns = [turn for turn in ctx.transcript.turns if turn.role is Role.USER]
    crossed = _crossing(user_turns, lambda _: 1, limit)
    drafts = []
    if crossed is not None:
        turn, total = crossed
        explanation = f"{total:.0f} user turns exceed the budget of {limit}"
        drafts.append(_over(turn, explanation, "max_user_turns", total, limit))
    return Result(value=len(user_turns), findings=drafts)


def latency_budget(ctx: Context) -> Result:
    session_limit = _budget(ctx, "max_session_latency_ms")
    turn_limit = _budget(ctx, "max_turn_latency_ms")
    if session_limit is None and turn_limit is None:
        return unscored("contract sets no latency budget")
    turns = ctx.transcript.turns
    if all(turn.latency_ms is None for turn in turns):
        return unscored("the session reports no model call latency")
    drafts = []
    if turn_limit is not None:
        drafts += [
            _over(
                turn.index,
                f"model call took {turn.latency_ms:.0f} ms, over the {turn_limit:.0f} ms budget",
                "max_turn_latency_ms",
                turn.latency_ms,
                turn_limit,
            )
            for turn in turns
            if turn.latency_ms is not None and turn.latency_ms > turn_limit
        ]
    crossed = _crossing(turns, _latency, session_limit) if session_limit is not None else None
    if crossed is not None:
        turn, total = crossed
        explanation = f"session latency {total:.0f} ms exceeds the {session_limit:.0f} ms budget"
        drafts.append(_over(turn, explanation, "max_session_latency_ms", total, session_limit))
    return Result(value=sum(_latency(turn) for turn in turns), findings=drafts)


def token_budget(ctx: Context) -> Result:
    limit = _budget(ctx, "max_tokens")
    if limit is None:
        return unscored("contract sets no budgets.max_tokens")
    if not any(turn.usage for turn in ctx.transcript.turns):
        return unscored("the session reports no token usage")
    crossed = _crossing(ctx.transcript.turns, _tokens, limit)
    drafts = []
    if crossed is not None:
        turn, total = crossed
        explanation = f"{total:.0f} tokens exceed the budget of {limit}"
        drafts.append(_over(turn, explanation, "max_tokens", total, limit))
    return Result(value=sum(_tokens(turn) for turn in ctx.transcript.turns), findings=drafts)


def cost_budget(ctx: Context) -> Result:
    limit = _budget(ctx, "max_cost_usd")
    if limit is None:
        return unscored("contract sets no budgets.max_cost_usd")
    if not any(turn.usage for turn in ctx.transcript.turns):
        return unscored("the session reports no token usage")
    costs = []
    for turn in ctx.transcript.turns:
        cost = _cost(turn, ctx.config.prices)
        if isinstance(cost, str):
            return unscored(cost)
        costs.append(cost)
    by_turn = dict(zip((turn.index for turn in ctx.transcript.turns), costs, strict=True))
    crossed = _crossing(ctx.transcript.turns, lambda turn: by_turn[turn.index], limit)
    drafts = []
    if crossed is not None:
        turn, total = crossed
        explanation = f"cost {total:.4f} USD exceeds the budget of {limit} USD"
        drafts.append(_over(turn, explanation, "max_cost_usd", round(total, 6), limit))
    return Result(value=sum(costs), findings=drafts)
