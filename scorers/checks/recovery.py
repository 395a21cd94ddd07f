"""Trajectory level: what the assistant did right after each failed tool call.

Recovered: it retried, used another tool, escalated, or told the user the step failed. Not
recovered: it answered as if the call had worked (a hallucinated result), or said nothing about it
before the user spoke again or the session ended (a silent give-up).
"""

from __future__ import annotations

from turnwatch.scorers.phrases import ESCALATION, FAILURE_ACKNOWLEDGED
from turnwatch.scorers.scorer import Context, Draft, Result, call_evidence

from turnwatch.schema import Role
from turnwatch.scores import Severity


def tool_error_recovery(ctx: Context) -> Result:
    events = ctx.transcript.events
    failures = 0
    drafts = []
    for position, event in enumerate(events):
        call = event.call
        if call is None or not call.failed:
            continue
        failures += 1
        following = events[position + 1] if position + 1 < len(events) else None
        if following is None or following.turn.role is Role.USER:
            drafts.append(
                Draft(
                    call.turn_index,
                    f"{call.name} failed and the assistant gave up silently",
                    Severity.WARNING,
                    call_evidence(call),
                )
            )
        elif following.call is None and following.turn.role is Role.ASSISTANT:
            text = following.turn.text or ""
            if not (ESCALATION.search(text) or FAILURE_ACKNOWLEDGED.search(text)):
                drafts.append(
                    Draft(
                        following.turn.index,
                        f"{call.name} failed at turn {call.turn_index} and the assistant "
                        "answered as if it had succeeded",
                        evidence=call_evidence(call, related_turn_index=call.turn_index),
                    )
                )
    return Result(value=len(drafts) if failures else None, findings=drafts)
