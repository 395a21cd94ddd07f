"""Trajectory level: forbidden actions and facts before acting (approvals: approval.py)."""

from __future__ import annotations

from turnwatch.scorers.conditions import all_hold
from turnwatch.scorers.scorer import Context, Draft, Result, call_evidence, counted
from turnwatch.scorers.transcript import json_tokens

from turnwatch.schema import Role


def forbidden_action(ctx: Context) -> Result:
    assert ctx.contract is not None
    drafts = []
    for call in ctx.transcript.calls:
        for action in ctx.contract.forbidden_actions:
            if action.tool == call.name and all_hold(action.when, call.call.arguments):
                condition = " and ".join(c.describe() for c in action.when)
                drafts.append(
                    Draft(
                        call.turn_index,
                        f"forbidden action {action.id}: called {call.name}"
                        + (f" with {condition}" if condition else ""),
                        evidence=call_evidence(call, action.id),
                    )
                )
    return counted(drafts)


def required_facts(ctx: Context) -> Result:
    """Each fact must be in the session (user text or a tool result) before the tools needing it."""
    assert ctx.contract is not None
    facts = ctx.contract.required_facts
    success_tools = ctx.contract.success_tools()
    known: set[str] = set()
    drafts = []
    for event in ctx.transcript.events:
        turn, call = event.turn, event.call
        if call is None:
            if turn.role is Role.USER:
                known.update(entity for _, entity in ctx.transcript.text_tokens[turn.index])
            continue
        for fact in facts:
            if call.name in (fact.before or success_tools) and known.isdisjoint(fact.entities):
                drafts.append(
                    Draft(
                        call.turn_index,
                        f"{call.name} called before required fact {fact.id} "
                        f"({'/'.join(fact.entities)}) was established",
                        evidence=call_evidence(call, fact.id),
                    )
                )
        if not call.failed:
            known.update(entity for _, entity in json_tokens(call.call.result))
    return counted(drafts)
