"""Trajectory level: what came of each failed tool call, judged by outcome rather than keywords.

After a failed call, before the user speaks again, the assistant recovered if it
- called the same tool again with the same arguments and it worked (a retry),
- called a declared alternative (`tools.<name>.alternatives`; without a contract, any other
  tool) and it worked,
- handed over to a human (an escalation tool, or saying so), or
- told the user the step failed or did not happen.
Otherwise its reply is an error: a reply that states values no tool result, user message or
earlier answer contained is a fabricated result; any other reply answered as if the call had
worked. Saying nothing before the user speaks again (or the session ends) is a silent give-up
(a warning).
"""

from __future__ import annotations

from dataclasses import dataclass

from turnwatch.scorers.phrases import FAILURE_ACKNOWLEDGED, hands_over, tokens
from turnwatch.scorers.scorer import Context, Draft, Result, call_evidence
from turnwatch.scorers.sentences import numbers
from turnwatch.scorers.transcript import Call, Event, json_text

from turnwatch.schema import JsonValue, Role
from turnwatch.scores import Severity
from turnwatch.tokens import TOKEN, value_part


@dataclass(frozen=True, slots=True)
class Failure:
    call: Call
    recovered_by: str | None
    """retry, alternative, escalation, told_user; None when not recovered."""
    reply: Event | None
    """The assistant text that followed, when it did not recover."""
    unsupported: tuple[str, ...] = ()
    """Tokens and numbers of that reply no earlier message or tool result contained."""


class _Support:
    """Values the conversation has established so far: what a reply may repeat."""

    def __init__(self, ctx: Context) -> None:
        self.hexes: set[str] = set()
        self.numbers: set[float] = set()
        for text in ctx.session.system_instructions:
            self.add_text(text)

    def add_text(self, text: str) -> None:
        self.hexes.update(value_part(token) for token, _ in tokens(text))
        self.numbers.update(numbers(text))

    def add_json(self, value: JsonValue) -> None:
        self.add_text(json_text(value))

    def unsupported(self, text: str) -> tuple[str, ...]:
        missing = [token for token, _ in tokens(text) if value_part(token) not in self.hexes]
        missing += [f"{n:g}" for n in sorted(numbers(TOKEN.sub(" ", text)) - self.numbers)]
        return tuple(missing)


def failures(ctx: Context) -> list[Failure]:
    """Every failed call and what came of it (shared by the recovery and outcome checks)."""
    return ctx.view("recovery.failures", lambda: _failures(ctx))


def _failures(ctx: Context) -> list[Failure]:
    contract = ctx.contract
    escalations = contract.escalation_tools() if contract is not None else set()
    events = ctx.transcript.events
    support = _Support(ctx)
    found = []
    for position, event in enumerate(events):
        call = event.call
        if call is None:
            if event.turn.text:
                support.add_text(event.turn.text)
            continue
        if not call.failed:
            support.add_json(call.call.arguments)
            support.add_json(call.call.result)
            continue
        window = []
        for later in events[position + 1 :]:
            if later.call is None and later.turn.role is Role.USER:
                break
            window.append(later)
        alternatives = (
            set(contract.tools[call.name].alternatives)
            if contract is not None and call.name in contract.tools
            else None
        )
        found.append(_outcome(call, window, alternatives, escalations, support))
    return found


def _outcome(
    call: Call,
    window: list[Event],
    alternatives: set[str] | None,
    escalations: set[str],
    support: _Support,
) -> Failure:
    signature = call.signature
    for later in window:
        other = later.call
        if other is None or other.failed:
            continue
        if other.signature == signature:
            return Failure(call, "retry", None)
        if other.name in escalations:
            return Failure(call, "escalation", None)
        if other.name != call.name and (alternatives is None or other.name in alternatives):
            return Failure(call, "alternative", None)
    replies = [later for later in window if later.call is None and later.turn.text]
    for reply in replies:
        text = reply.turn.text or ""
        if hands_over(text):
            return Failure(call, "escalation", None)
        if FAILURE_ACKNOWLEDGED.search(text):
            return Failure(call, "told_user", None)
    if not replies:
        return Failure(call, None, None)
    first = replies[0]
    return Failure(call, None, first, support.unsupported(first.turn.text or ""))


def tool_error_recovery(ctx: Context) -> Result:
    found = failures(ctx)
    drafts = []
    for failure in found:
        if failure.recovered_by is not None:
            continue
        call = failure.call
        if failure.reply is None:
            drafts.append(
                Draft(
                    call.turn_index,
                    f"{call.name} failed and the assistant gave up silently",
                    Severity.WARNING,
                    call_evidence(call, "recovery.silent"),
                )
            )
            continue
        if failure.unsupported:
            first_token = next((value for value in failure.unsupported if value[0] == "<"), None)
            explanation = (
                f"{call.name} failed at turn {call.turn_index} and the assistant stated "
                f"{len(failure.unsupported)} value(s) no tool result contained"
            )
            evidence = call_evidence(
                call,
                "recovery.fabricated_result",
                related_turn_index=call.turn_index,
                token=first_token,
                measured=len(failure.unsupported),
            )
        else:
            explanation = (
                f"{call.name} failed at turn {call.turn_index} and the assistant "
                "answered as if it had succeeded"
            )
            evidence = call_evidence(
                call, "recovery.unacknowledged", related_turn_index=call.turn_index
            )
        drafts.append(Draft(failure.reply.turn.index, explanation, evidence=evidence))
    return Result(value=len(drafts) if found else None, findings=drafts)
