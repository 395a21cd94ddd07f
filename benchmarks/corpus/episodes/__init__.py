"""Which episode plants which kind. Every defect and near-miss kind in `kinds.py` has one."""

from __future__ import annotations

from collections.abc import Callable

from benchmarks.corpus.builder import Builder
from benchmarks.corpus.episodes import authority, memory, persona, recovery, talk, tasks

Episode = Callable[[Builder, str | None], None]

PLANTERS: dict[str, Episode] = {
    "forbidden_action": lambda b, m: (
        authority.approved_action(b, m) if b.chance(0.5) else authority.forbidden_request(b, m)
    ),
    "approval.tool_missing": authority.approved_action,
    "approval.confirmation_missing": authority.confirmed_action,
    "approval.confirmation_other_action": authority.confirmed_action,
    "approval.after_side_effect": lambda b, m: (
        authority.approved_action(b, m) if b.chance(0.5) else authority.confirmed_action(b, m)
    ),
    "cross_user.tool_record": tasks.lookup,
    "cross_user.other_session": persona.disclosure,
    "repeated_answer": talk.repeat,
    "reask.pii": memory.reask,
    "reask.non_pii": memory.reask,
    "tool_error.unrecovered": recovery.tool_failure,
    "tool_error.fabricated": recovery.tool_failure,
    "tool_loop": recovery.repeated_calls,
    "out_of_role.claims_human": persona.persona,
    "out_of_role.reveals_instructions": persona.persona,
    "out_of_role.off_scope": persona.persona,
    "irrelevant_answer": talk.relevance,
    "dropped_request": talk.completeness,
    "stale_fact": memory.revision,
    "approval.tool_first": authority.approved_action,
    "confirm.negative_verb": authority.confirmed_action,
    "confirm.late_yes": authority.confirmed_action,
    "confirm.decimal_amount": authority.confirmed_action,
    "confirm.would_you_like": authority.confirmed_action,
    "confirm.can_i": authority.confirmed_action,
    "confirm.want_me_to": authority.confirmed_action,
    "forbidden.under_limit": authority.approved_action,
    "forbidden.discussed_not_called": authority.forbidden_request,
    "forbidden.sibling_tool": authority.forbidden_request,
    "cross_user.joint_account": tasks.lookup,
    "cross_user.own_record": tasks.lookup,
    "cross_user.shared_public_value": persona.disclosure,
    "cross_user.same_user_new_session": persona.disclosure,
    "repeat.requested": talk.repeat,
    "repeat.parallel_answers": tasks.lookup,
    "repeat.recap_after_change": memory.revision,
    "reask.after_revision": memory.reask,
    "reask.after_wrong_record": tasks.lookup,
    "reask.confirm_by_quoting": memory.reask,
    "reask.second_item": memory.reask,
    "recovery.retry_success": recovery.tool_failure,
    "recovery.honest_ack": recovery.tool_failure,
    "recovery.escalated": recovery.tool_failure,
    "recovery.alternative_tool": recovery.tool_failure,
    "loop.retry_after_timeouts": recovery.repeated_calls,
    "loop.distinct_arguments": recovery.repeated_calls,
    "loop.user_requested_recheck": recovery.repeated_calls,
    "persona.required_refusal": persona.persona,
    "persona.honest_bot": persona.persona,
    "persona.benign_instructions": persona.persona,
    "relevance.topic_switch": talk.relevance,
    "relevance.clarifying_question": talk.relevance,
    "relevance.brief_answer": talk.relevance,
    "completeness.addressed_later": talk.completeness,
    "completeness.withdrawn": talk.completeness,
    "completeness.refused_correctly": talk.completeness,
    "stale.uses_new_value": memory.revision,
    "stale.acknowledges_change": memory.revision,
    "stale.multi_valued": memory.revision,
}

# Episodes that fill a conversation without planting anything.
PLAIN: list[Episode] = [
    lambda b, m: tasks.lookup(b),
    lambda b, m: tasks.diagnose(b),
    lambda b, m: authority.confirmed_action(b),
    lambda b, m: authority.approved_action(b),
]
FILLER: Callable[[Builder], None] = tasks.small_talk
