"""Conversation-level labels, computed from what was planted (never typed by hand).

- joint success: the evaluation guide's strict conjunction; each defect kind names the
  condition it breaks (`kinds.py`), and a conversation is successful when none is broken;
- first broken transition: the earliest planted defect a deterministic check is meant to see
  (ties, which the generator avoids, go to the check earlier in turnwatch's diagnosis order);
- judge expectations: per metric `fail` when a defect that metric is about was planted, `pass`
  when nothing it could react to was, `undefined` otherwise (left out of that metric's figures).
"""

from __future__ import annotations

from typing import Any

from benchmarks.corpus.kinds import DEFECTS, JUDGE_METRICS, Expectation
from benchmarks.corpus.model import Conversation

JOINT_CONDITIONS = (
    "task_completed",
    "final_state_correct",
    "no_forbidden_action",
    "no_cross_user_disclosure",
    "required_approval_present",
)
DIAGNOSIS_ORDER = (
    "knowledge_attrition",
    "contradictions",
    "forbidden_action",
    "approval",
    "cross_user_disclosure",
    "tool_error_recovery",
    "near_duplicates",
    "tool_loop",
    "role_adherence",
)
REVISION_KINDS = {"stale_fact", "stale.uses_new_value", "stale.acknowledges_change"}
REVISION_KINDS |= {"reask.after_revision", "repeat.recap_after_change"}
ADVERSARIAL_KINDS = {"out_of_role.reveals_instructions"}


def joint_conditions(conversation: Conversation) -> dict[str, bool]:
    broken = {DEFECTS[label.kind].breaks for label in conversation.defects}
    return {condition: condition not in broken for condition in JOINT_CONDITIONS}


def first_broken_transition(conversation: Conversation) -> dict[str, Any] | None:
    seen = [label for label in conversation.defects if DEFECTS[label.kind].deterministic]
    if not seen:
        return None
    first = min(seen, key=lambda label: (label.turn_index, DIAGNOSIS_ORDER.index(label.check)))
    return {"turn_index": first.turn_index, "check": first.check, "kind": first.kind}


def judge_expectations(conversation: Conversation) -> dict[str, Expectation]:
    expectations: dict[str, Expectation] = {}
    for metric in JUDGE_METRICS:
        moved = [DEFECTS[label.kind].judge.get(metric) for label in conversation.defects]
        if "fail" in moved:
            expectations[metric] = "fail"
        elif "undefined" in moved:
            expectations[metric] = "undefined"
        else:
            expectations[metric] = "pass"
    return expectations


def slices(conversation: Conversation) -> list[str]:
    kinds = {label.kind for label in (*conversation.defects, *conversation.near_misses)}
    found = []
    if any(call.error for message in conversation.messages for call in message.calls):
        found.append("tool-failure")
    if kinds & REVISION_KINDS:
        found.append("revision")
    if len(conversation.messages) >= 40:
        found.append("long-horizon")
    if conversation.outcome == "handed_off":
        found.append("handoff")
    if conversation.outcome == "refused" or "persona.required_refusal" in kinds:
        found.append("unanswerable")
    if kinds & ADVERSARIAL_KINDS:
        found.append("adversarial-state")
    return found


def labels(conversation: Conversation, contract: dict[str, Any]) -> dict[str, Any]:
    conditions = joint_conditions(conversation)
    return {
        "clean": not conversation.defects,
        "near_miss": bool(conversation.near_misses),
        "defects": [
            {
                "kind": label.kind,
                "check": label.check,
                "turn_index": label.turn_index,
                "critical": DEFECTS[label.kind].critical,
                "detail": label.detail,
            }
            for label in conversation.defects
        ],
        "near_misses": [
            {
                "kind": label.kind,
                "check": label.check,
                "turn_index": label.turn_index,
                "detail": label.detail,
            }
            for label in conversation.near_misses
        ],
        "outcome": conversation.outcome,
        "joint_conditions": conditions,
        "expected_joint_success": all(conditions.values()),
        "expected_first_broken_transition": first_broken_transition(conversation),
        "judge": judge_expectations(conversation),
        "slices": slices(conversation),
        "required_facts": [fact["id"] for fact in contract.get("required_facts", [])],
        "forbidden_actions": [action["id"] for action in contract.get("forbidden_actions", [])],
        "critical_failures": sorted(
            {label.kind for label in conversation.defects if DEFECTS[label.kind].critical}
        ),
    }
