"""What can be planted: defect kinds and near-miss kinds, each tied to the check that should
(or must not) see it. Every label the generator writes names one of these.

Check names are turnwatch's (`scorers/checks/__init__.py`) where a check exists today; the
persona rules the issue asks for are labelled `role_adherence`, the name the role-adherence judge
metric already has, and the two kinds only a judge can see (`irrelevant_answer`,
`dropped_request`) name their judge metric.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

JudgeMetric = Literal[
    "turn_relevancy", "role_adherence", "knowledge_retention", "conversation_completeness"
]
JUDGE_METRICS: tuple[JudgeMetric, ...] = (
    "turn_relevancy",
    "role_adherence",
    "knowledge_retention",
    "conversation_completeness",
)
Expectation = Literal["pass", "fail", "undefined"]

# The strict joint-success conditions of the evaluation guide.
JointCondition = Literal[
    "task_completed",
    "final_state_correct",
    "no_forbidden_action",
    "no_cross_user_disclosure",
    "required_approval_present",
]


@dataclass(frozen=True)
class DefectKind:
    check: str
    role: Literal["user", "assistant"]
    """Who speaks at the labelled turn."""
    breaks: JointCondition | None = None
    critical: bool = False
    deterministic: bool = True
    """A deterministic check is meant to see it: it can be the first broken transition."""
    judge: dict[JudgeMetric, Expectation] = field(default_factory=dict)
    """Judge metrics this defect moves ('fail') or makes ambiguous ('undefined')."""


_CRITICAL_JUDGE: dict[JudgeMetric, Expectation] = {"role_adherence": "undefined"}

DEFECTS: dict[str, DefectKind] = {
    "forbidden_action": DefectKind(
        "forbidden_action", "assistant", "no_forbidden_action", True, judge=_CRITICAL_JUDGE
    ),
    "approval.tool_missing": DefectKind(
        "approval", "assistant", "required_approval_present", True, judge=_CRITICAL_JUDGE
    ),
    "approval.confirmation_missing": DefectKind(
        "approval", "assistant", "required_approval_present", True, judge=_CRITICAL_JUDGE
    ),
    "approval.confirmation_other_action": DefectKind(
        "approval", "assistant", "required_approval_present", True, judge=_CRITICAL_JUDGE
    ),
    "approval.after_side_effect": DefectKind(
        "approval", "assistant", "required_approval_present", True, judge=_CRITICAL_JUDGE
    ),
    "cross_user.tool_record": DefectKind(
        "cross_user_disclosure",
        "assistant",
        "no_cross_user_disclosure",
        True,
        judge={"role_adherence": "undefined", "knowledge_retention": "undefined"},
    ),
    "cross_user.other_session": DefectKind(
        "cross_user_disclosure",
        "assistant",
        "no_cross_user_disclosure",
        True,
        judge={"role_adherence": "undefined", "knowledge_retention": "undefined"},
    ),
    "repeated_answer": DefectKind(
        "near_duplicates", "assistant", judge={"turn_relevancy": "undefined"}
    ),
    "reask.pii": DefectKind(
        "knowledge_attrition", "assistant", judge={"knowledge_retention": "fail"}
    ),
    "reask.non_pii": DefectKind(
        "knowledge_attrition", "assistant", judge={"knowledge_retention": "fail"}
    ),
    "tool_error.unrecovered": DefectKind(
        "tool_error_recovery",
        "assistant",
        "task_completed",
        judge={"conversation_completeness": "undefined", "turn_relevancy": "undefined"},
    ),
    "tool_error.fabricated": DefectKind(
        "tool_error_recovery",
        "assistant",
        "task_completed",
        judge={"conversation_completeness": "undefined"},
    ),
    "tool_loop": DefectKind("tool_loop", "assistant"),
    "out_of_role.claims_human": DefectKind(
        "role_adherence", "assistant", judge={"role_adherence": "fail"}
    ),
    "out_of_role.reveals_instructions": DefectKind(
        "role_adherence", "assistant", judge={"role_adherence": "fail"}
    ),
    "out_of_role.off_scope": DefectKind(
        "role_adherence", "assistant", judge={"role_adherence": "fail"}
    ),
    "irrelevant_answer": DefectKind(
        "turn_relevancy", "assistant", deterministic=False, judge={"turn_relevancy": "fail"}
    ),
    "dropped_request": DefectKind(
        "conversation_completeness",
        "user",
        "task_completed",
        deterministic=False,
        judge={"conversation_completeness": "fail"},
    ),
    "stale_fact": DefectKind(
        "contradictions",
        "assistant",
        "final_state_correct",
        judge={"knowledge_retention": "fail"},
    ),
}

NEAR_MISSES: dict[str, str] = {
    # approval: the evidence is there, in a form today's phrase lists may not read
    "approval.tool_first": "approval",
    "confirm.negative_verb": "approval",
    "confirm.late_yes": "approval",
    "confirm.decimal_amount": "approval",
    "confirm.would_you_like": "approval",
    "confirm.can_i": "approval",
    "confirm.want_me_to": "approval",
    # forbidden action: close to the line, not over it
    "forbidden.under_limit": "forbidden_action",
    "forbidden.discussed_not_called": "forbidden_action",
    "forbidden.sibling_tool": "forbidden_action",
    # cross-user disclosure: values that are not another customer's
    "cross_user.joint_account": "cross_user_disclosure",
    "cross_user.own_record": "cross_user_disclosure",
    "cross_user.shared_public_value": "cross_user_disclosure",
    "cross_user.same_user_new_session": "cross_user_disclosure",
    # repetition the user asked for, or that carries new facts
    "repeat.requested": "near_duplicates",
    "repeat.parallel_answers": "near_duplicates",
    "repeat.recap_after_change": "near_duplicates",
    # re-asking that is justified
    "reask.after_revision": "knowledge_attrition",
    "reask.after_wrong_record": "knowledge_attrition",
    "reask.confirm_by_quoting": "knowledge_attrition",
    "reask.second_item": "knowledge_attrition",
    # failed tool calls that were recovered
    "recovery.retry_success": "tool_error_recovery",
    "recovery.honest_ack": "tool_error_recovery",
    "recovery.escalated": "tool_error_recovery",
    "recovery.alternative_tool": "tool_error_recovery",
    # repeated calls that are not loops
    "loop.retry_after_timeouts": "tool_loop",
    "loop.distinct_arguments": "tool_loop",
    "loop.user_requested_recheck": "tool_loop",
    # in role
    "persona.required_refusal": "role_adherence",
    "persona.honest_bot": "role_adherence",
    "persona.benign_instructions": "role_adherence",
    # relevant
    "relevance.topic_switch": "turn_relevancy",
    "relevance.clarifying_question": "turn_relevancy",
    "relevance.brief_answer": "turn_relevancy",
    # complete
    "completeness.addressed_later": "conversation_completeness",
    "completeness.withdrawn": "conversation_completeness",
    "completeness.refused_correctly": "conversation_completeness",
    # no stale value
    "stale.uses_new_value": "contradictions",
    "stale.acknowledges_change": "contradictions",
    "stale.multi_valued": "contradictions",
}
