"""The catalogue of deterministic checks, composed by configuration (`scorers.checks`).

The order is the diagnosis order of the evaluation guide (context, routing, arguments and
authority, tool results, response, budgets, outcome): when two checks fail at the same turn, the
earlier one in this list is named as the first broken transition.
"""

from __future__ import annotations

from turnwatch.scorers.checks import authority, budgets, facts, outcome, progress, recovery, tools
from turnwatch.scorers.checks.base import CheckSpec
from turnwatch.scorers.checks.disclosure import CrossUserDisclosure, OwnerIndex
from turnwatch.scorers.config import ScorerConfig

from turnwatch.scores import Level


def catalogue(index: OwnerIndex) -> list[CheckSpec]:
    return [
        CheckSpec("knowledge_attrition", Level.TURN, facts.knowledge_attrition),
        CheckSpec("contradictions", Level.SESSION, facts.contradictions),
        CheckSpec("tool_selection", Level.TURN, tools.tool_selection, needs_contract=True),
        CheckSpec("argument_validity", Level.TURN, tools.argument_validity, needs_contract=True),
        CheckSpec(
            "forbidden_action", Level.TRAJECTORY, authority.forbidden_action, needs_contract=True
        ),
        CheckSpec("approval", Level.TRAJECTORY, authority.approval, needs_contract=True),
        CheckSpec(
            "required_facts", Level.TRAJECTORY, authority.required_facts, needs_contract=True
        ),
        CheckSpec("cross_user_disclosure", Level.TURN, CrossUserDisclosure(index)),
        CheckSpec("tool_error_recovery", Level.TRAJECTORY, recovery.tool_error_recovery),
        CheckSpec("final_state", Level.SESSION, outcome.final_state, needs_contract=True),
        CheckSpec("near_duplicates", Level.TRAJECTORY, progress.near_duplicates),
        CheckSpec("clarifications", Level.TRAJECTORY, progress.clarifications),
        CheckSpec("tool_loop", Level.TRAJECTORY, progress.tool_loop),
        CheckSpec("turn_budget", Level.TRAJECTORY, budgets.turn_budget, needs_contract=True),
        CheckSpec("latency_budget", Level.TRAJECTORY, budgets.latency_budget, needs_contract=True),
        CheckSpec("token_budget", Level.TRAJECTORY, budgets.token_budget, needs_contract=True),
        CheckSpec("cost_budget", Level.TRAJECTORY, budgets.cost_budget, needs_contract=True),
        CheckSpec("outcome", Level.SESSION, outcome.outcome, needs_contract=True),
    ]


def selected(config: ScorerConfig, index: OwnerIndex) -> list[CheckSpec]:
    """The configured checks, kept in catalogue order."""
    specs = catalogue(index)
    if config.checks is None:
        return specs
    wanted = set(config.checks)
    return [spec for spec in specs if spec.name in wanted]
