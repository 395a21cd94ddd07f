"""Session level: was the task completed (or correctly handed over), and is the final state right.

Success evidence is the contract's (`success.any_of`): a successful tool call meeting its result
conditions (optionally the last call), a correct refusal of a declared out-of-scope topic, or the
user saying in their last message that the problem is solved. A hand-over to a human is always a
correct end, unless a side effect follows it. Evidence does not outweigh a failure the
conversation shows: a failed call nobody recovered from (tool_error_recovery) means the task was
not completed, whatever the closing words.
"""

from __future__ import annotations

from turnwatch.scorers.checks.facts import stale_calls
from turnwatch.scorers.checks.persona import scope_answers
from turnwatch.scorers.checks.recovery import failures
from turnwatch.scorers.conditions import all_hold
from turnwatch.scorers.contract import Contract
from turnwatch.scorers.contract_sections import SuccessEvidence
from turnwatch.scorers.phrases import NOT_SOLVED, SOLVED, hands_over
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
        elif event.turn.role is Role.ASSISTANT and hands_over(event.turn.text or ""):
            return position
    return None


def _meets(spec: SuccessEvidence, call: Call, last: Call) -> bool:
    return (
        spec.tool == call.name
        and not call.failed
        and all_hold(spec.result, call.call.result)
        and (not spec.final or call is last)
    )


def _user_confirmed(ctx: Context) -> bool:
    users = ctx.transcript.texts(Role.USER)
    if not users:
        return False
    last = users[-1].text or ""
    return SOLVED.search(last) is not None and NOT_SOLVED.search(last) is None


def _evidence(ctx: Context, entry: SuccessEvidence) -> bool:
    calls = ctx.transcript.calls
    if entry.tool is not None:
        return any(_meets(entry, call, calls[-1]) for call in calls)
    if entry.refusal:
        answers = scope_answers(ctx)
        return bool(answers) and all(answer.declined for answer in answers)
    return _user_confirmed(ctx)


def outcome(ctx: Context) -> Result:
    contract = ctx.contract
    assert contract is not None
    if contract.success is None:
        return unscored("contract defines no success condition")
    unrecovered = next((f for f in failures(ctx) if f.recovered_by is None), None)
    if unrecovered is not None:
        draft = Draft(
            ctx.transcript.last_index,
            f"task not completed: {unrecovered.call.name} failed at turn "
            f"{unrecovered.call.turn_index} and was never recovered",
            evidence=call_evidence(
                unrecovered.call, "success", related_turn_index=unrecovered.call.turn_index
            ),
        )
        return Result(value=0.0, findings=[draft])
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
    entries = contract.success.any_of
    if any(_evidence(ctx, entry) for entry in entries):
        return Result(value=1.0)
    wanted = " or ".join(entry.describe() for entry in entries)
    draft = Draft(
        ctx.transcript.last_index,
        f"task not completed (no success evidence: {wanted}) and not escalated",
        evidence=Evidence(rule="success"),
    )
    return Result(value=0.0, findings=[draft])


def final_state(ctx: Context) -> Result:
    """The state the session leaves behind: the last success-tool call meets its condition, and
    no side effect was made with a value the user had replaced. A session that changed nothing
    leaves the state as it was, which is correct."""
    contract = ctx.contract
    assert contract is not None
    if contract.success is None:
        return unscored("contract defines no success condition")
    drafts = [
        Draft(
            stale.call.turn_index,
            f"{stale.call.name} was called with {stale.token}, which the user replaced at turn "
            f"{stale.replaced_at}",
            evidence=call_evidence(
                stale.call, "success", token=stale.token, related_turn_index=stale.replaced_at
            ),
        )
        for stale in stale_calls(ctx)
        if stale.call.name in contract.tools and contract.tools[stale.call.name].side_effect
    ]
    tools = set(contract.success_tools())
    writes = [call for call in ctx.transcript.calls if call.name in tools and not call.failed]
    if writes:
        last = writes[-1]
        specs = [entry for entry in contract.success.any_of if entry.tool is not None]
        if not any(_meets(spec, last, ctx.transcript.calls[-1]) for spec in specs):
            drafts.append(
                Draft(
                    last.turn_index,
                    f"the last {last.name} call leaves a state that does not meet the success "
                    "condition",
                    evidence=call_evidence(last, "success"),
                )
            )
    return Result(value=0.0 if drafts else 1.0, findings=drafts)
