"""The catalogue of deterministic checks, composed by configuration (`scorers.checks`).

Each check is a scorer (`scorers/scorer.py`): `Context -> Result`, run inline.

The order is the diagnosis order of the evaluation guide (context, routing, arguments and
authority, tool results, response, budgets, outcome): when two checks fail at the same turn, the
earlier one in this list is named as the first broken transition.
"""

from __future__ import annotations

from turnwatch.scorers.checks import (
    approval,
    authority,
    budgets,
    facts,
    outcome,
    persona,
    progress,
    recovery,
    tools,
)
from turnwatch.scorers.checks.disclosure import CrossUserDisclosure, OwnerIndex
from turnwatch.scorers.config import ScorerConfig
from turnwatch.scorers.scorer import ScorerSpec

from turnwatch.scores import Level


def catalogue(index: OwnerIndex) -> list[ScorerSpec]:
    return [
        ScorerSpec("knowledge_attrition", facts.knowledge_attrition, Level.TURN),
        ScorerSpec("contradictions", facts.contradictions, Level.SESSION),
        ScorerSpec("tool_selection", tools.tool_selection, Level.TURN, needs_contract=True),
        ScorerSpec("argument_validity", tools.argument_validity, Level.TURN, needs_contract=True),
        ScorerSpec(
            "forbidden_action", authority.forbidden_action, Level.TRAJECTORY, needs_contract=True
        ),
        ScorerSpec("approval", approval.approval, Level.TRAJECTORY, needs_contract=True),
        ScorerSpec(
            "required_facts", authority.required_facts, Level.TRAJECTORY, needs_contract=True
        ),
        ScorerSpec("cross_user_disclosure", CrossUserDisclosure(index), Level.TURN),
        ScorerSpec("tool_error_recovery", recovery.tool_error_recovery, Level.TRAJECTORY),
        ScorerSpec("final_state", outcome.final_state, Level.SESSION, needs_contract=True),
        ScorerSpec("role_adherence", persona.role_adherence, Level.TURN, needs_contract=True),
        ScorerSpec("near_duplicates", progress.near_duplicates, Level.TRAJECTORY),
        ScorerSpec("clarifications", progress.clarifications, Level.TRAJECTORY),
        ScorerSpec("tool_loop", progress.tool_loop, Level.TRAJECTORY),
        ScorerSpec("turn_budget", budgets.turn_budget, Level.TRAJECTORY, needs_contract=True),
        ScorerSpec("latency_budget", budgets.latency_budget, Level.TRAJECTORY, needs_contract=True),
        ScorerSpec("token_budget", budgets.token_budget, Level.TRAJECTORY, needs_contract=True),
        ScorerSpec("cost_budget", budgets.cost_budget, Level.TRAJECTORY, needs_contract=True),
        ScorerSpec("outcome", outcome.outcome, Level.SESSION, needs_contract=True),
    ]


def selected(config: ScorerConfig, index: OwnerIndex) -> list[ScorerSpec]:
    """The configured checks, kept in catalogue order."""
    specs = catalogue(index)
    if config.checks is None:
        return specs
    wanted = set(config.checks)
    return [spec for spec in specs if spec.name in wanted]
