"""Session level: was the task completed (or correctly escalated), and is the final state right."""

from __future__ import annotations

from turnwatch.scorers.contract import Contract, SuccessCall, all_hold
from turnwatch.scorers.phrases import ESCALATION
from turnwatch.scorers.scorer import Context, Draft, Result, call_evidence, unscored
from turnwatch.scorers.transcript import Call, Transcript

from turnwatch.schema import Role
from turnwatch.scores import Evidence


def escalation_point(transcript: Transcript, contract: Contract | None) -> int | None:
    """Position in `transcript.events` of the first hand-over to a human, if any."""
    tools = contract.escalation_tools() if contract is not None else set()
    for position, event in enumerate(transcript.events):
        call = event.call
        if call is not None:
            if call.name in tools and not call.failed:
                return position
        elif event.turn.role is Role.ASSISTANT and ESCALATION.search(event.turn.text or ""):
            return position
    return None


def _meets(spec: SuccessCall, call: Call, last: Call) -> bool:
    return (
        spec.tool == call.name
        and not call.failed
        and all_hold(spec.result, call.call.result)
        and (not spec.final or call is last)
    )


def outcome(ctx: Context) -> Result:
    contract = ctx.contract
    assert contract is not None
    if contract.success is None:
        return unscored("contract defines no success condition")
    calls = ctx.transcript.calls
    specs = contract.success.any_of
    if calls and any(_meets(spec, call, calls[-1]) for call in calls for spec in specs):
        return Result(value=1.0)
    escalated = escalation_point(ctx.transcript, contract)
    if escalated is not None:
        side_effects = {name for name, tool in contract.tools.items() if tool.side_effect}
        handed_over = ctx.transcript.events[escalated].turn.index
        for event in ctx.transcript.events[escalated + 1 :]:
            if event.call is not None and event.call.name in side_effects:
                draft = Draft(
                    event.turn.index,
                    f"called side effect {event.call.name} after handing over to a "
                    f"human at turn {handed_over}",
                    evidence=call_evidence(event.call, related_turn_index=handed_over),
                )
                return Result(value=0.0, findings=[draft])
        return Result(value=1.0)
    wanted = " or ".join(spec.tool for spec in specs)
    draft = Draft(
        ctx.transcript.last_index,
        f"task not completed (no successful {wanted} meeting the success condition) "
        "and not escalated",
        evidence=Evidence(rule="success"),
    )
    return Result(value=0.0, findings=[draft])


def final_state(ctx: Context) -> Result:
    contract = ctx.contract
    assert contract is not None
    if contract.success is None:
        return unscored("contract defines no success condition")
    tools = set(contract.success_tools())
    writes = [call for call in ctx.transcript.calls if call.name in tools and not call.failed]
    if not writes:
        return unscored("no successful call of a success tool to read the final state from")
    last = writes[-1]
    if any(_meets(spec, last, ctx.transcript.calls[-1]) for spec in contract.success.any_of):
        return Result(value=1.0)
    draft = Draft(
        last.turn_index,
        f"the last {last.name} call leaves a state that does not meet the success condition",
        evidence=call_evidence(last, "success"),
    )
    return Result(value=0.0, findings=[draft])
