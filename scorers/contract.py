"""Conversation contracts: what one chatbot service may do, must do, and must not do.

One YAML file per service (matched on `service.name`); the format is documented in
`scorers/README.md`. Everything a check needs from the contract is validated here, at load time, so
a check never meets a malformed contract at scoring time.
"""

from __future__ import annotations

import re
from typing import Literal

import jsonschema
from pydantic import Field, PrivateAttr, field_validator, model_validator
from turnwatch.scorers.conditions import Condition, Regex
from turnwatch.scorers.contract_sections import IDENTIFIER, Ownership, Persona, Slot, Success
from turnwatch.scorers.sentences import phrase_pattern

from turnwatch.entities import EntityName
from turnwatch.schema import JsonValue
from turnwatch.section import Section

CheckName = Literal[
    "tool_selection",
    "argument_validity",
    "knowledge_attrition",
    "cross_user_disclosure",
    "forbidden_action",
    "approval",
    "required_facts",
    "near_duplicates",
    "clarifications",
    "tool_loop",
    "tool_error_recovery",
    "turn_budget",
    "latency_budget",
    "token_budget",
    "cost_budget",
    "outcome",
    "final_state",
    "contradictions",
    "role_adherence",
]


class ApprovalTool(Section):
    tool: str = Field(description="The tool whose successful call grants the approval.")
    result: list[Condition] = Field(
        default_factory=list, description="Conditions its result must meet (e.g. status eq)."
    )
    arguments: list[Condition] = Field(
        default_factory=list,
        description="Conditions on the approval call's own arguments, so a generic approval "
        "tool grants only the action it names (e.g. action eq issue_refund).",
    )
    match_arguments: list[str] = Field(
        default_factory=list,
        description="Argument names that must carry the same value in the approval call and the "
        "side effect, so an approval for one order does not authorise another.",
    )


class Approval(Section):
    tools: list[ApprovalTool] = Field(default_factory=list)
    user_confirmation: bool = Field(
        default=False,
        description="An explicit yes from the user after the assistant asked to confirm the "
        "action (the question names it: the tool's action words).",
    )
    calls_per_confirmation: int = Field(
        default=1,
        ge=1,
        description="Calls of the tool one confirmation authorises (1: every call needs its own).",
    )

    @model_validator(mode="after")
    def _some_evidence(self) -> Approval:
        if not self.tools and not self.user_confirmation:
            raise ValueError("an approval needs approval tools, user_confirmation, or both")
        return self

    def describe(self) -> str:
        options = [
            tool.tool
            if not tool.result
            else f"{tool.tool} with {', '.join(c.describe() for c in tool.result)}"
            for tool in self.tools
        ]
        if self.user_confirmation:
            options.append("user confirmation")
        return " or ".join(options)


class Tool(Section):
    description: str = ""
    arguments: dict[str, JsonValue] = Field(
        default_factory=lambda: {"type": "object"},
        description="JSON Schema (draft 2020-12) of the call arguments.",
    )
    side_effect: bool = Field(default=False, description="Changes state outside the chat.")
    approval: Approval | None = Field(default=None, description="Evidence needed before a call.")
    escalation: bool = Field(default=False, description="Calling it hands over to a human.")
    action_words: list[str] = Field(
        default_factory=list,
        description="Phrases that name the action in a confirmation question (`cancel`, "
        "`delivery day`); default: the words of the tool's name.",
    )
    alternatives: list[str] = Field(
        default_factory=list,
        description="Tools whose successful call stands in for this one when it fails.",
    )
    _validator: jsonschema.Draft202012Validator = PrivateAttr()
    _action: re.Pattern[str] | None = PrivateAttr(default=None)

    @field_validator("arguments")
    @classmethod
    def _valid_schema(cls, value: dict[str, JsonValue]) -> dict[str, JsonValue]:
        try:
            jsonschema.Draft202012Validator.check_schema(value)
        except jsonschema.SchemaError as exc:
            where = "/".join(str(part) for part in exc.absolute_path) or "(root)"
            raise ValueError(f"invalid JSON Schema at {where}: {exc.message}") from exc
        return value

    @model_validator(mode="after")
    def _approval_needs_side_effect(self) -> Tool:
        if self.approval is not None and not self.side_effect:
            raise ValueError("approval is only meaningful on a side_effect tool")
        self._validator = jsonschema.Draft202012Validator(self.arguments)
        return self

    @property
    def validator(self) -> jsonschema.Draft202012Validator:
        return self._validator

    def names_action(self, text: str) -> bool:
        """Whether the text names this tool's action (set by the contract, which knows the name)."""
        return self._action is not None and self._action.search(text) is not None


class ForbiddenAction(Section):
    id: str = Field(pattern=IDENTIFIER)
    tool: str
    when: list[Condition] = Field(
        default_factory=list, description="Argument conditions, all must hold; empty = any call."
    )
    description: str = ""


class RequiredFact(Section):
    id: str = Field(pattern=IDENTIFIER)
    entities: list[EntityName] = Field(
        min_length=1, description="De-identification token types that carry the fact."
    )
    before: list[str] = Field(
        default_factory=list,
        description="Tools that need the fact first; empty = the success condition's tools.",
    )


class Budgets(Section):
    max_user_turns: int | None = Field(default=None, gt=0)
    max_session_latency_ms: float | None = Field(default=None, gt=0)
    max_turn_latency_ms: float | None = Field(default=None, gt=0)
    max_tokens: int | None = Field(default=None, gt=0)
    max_cost_usd: float | None = Field(default=None, gt=0)
    max_retries: int | None = Field(
        default=None,
        ge=0,
        description="Identical retries allowed after a failed call before they are a loop "
        "(default scorers.max_retries).",
    )


DEFAULT_CRITICAL: list[CheckName] = ["forbidden_action", "approval", "cross_user_disclosure"]


class Contract(Section):
    service: str = Field(min_length=1, description="Matched on the spans' service.name.")
    id: str = Field(default="", description="Defaults to the service name.")
    version: str = Field(min_length=1)
    chatbot_role: str = Field(min_length=1)
    tools: dict[str, Tool] = Field(default_factory=dict)
    forbidden_actions: list[ForbiddenAction] = Field(default_factory=list)
    required_facts: list[RequiredFact] = Field(default_factory=list)
    success: Success | None = None
    budgets: Budgets = Field(default_factory=Budgets)
    max_clarifications: int | None = Field(default=None, ge=0)
    fact_questions: dict[EntityName, Regex] = Field(
        default_factory=dict,
        description="Token type -> regular expression for how the bot asks for that fact; "
        "added to the built-in ones.",
    )
    slots: dict[str, Slot] = Field(
        default_factory=dict, description="Facts the bot collects, by name (re-asked facts)."
    )
    ownership: Ownership | None = Field(
        default=None, description="Fields of tool results that say whose record it is."
    )
    persona: Persona = Field(default_factory=Persona)
    critical: list[CheckName] = Field(default_factory=lambda: list(DEFAULT_CRITICAL))
    severity: dict[CheckName, Literal["warning", "error"]] = Field(
        default_factory=dict,
        description="Severity of a check's findings, overriding the check's own (an `error` "
        "can be the first broken transition; critical checks stay critical).",
    )

    @field_validator("slots")
    @classmethod
    def _slot_names(cls, value: dict[str, Slot]) -> dict[str, Slot]:
        for name in value:
            if not re.match(IDENTIFIER, name):
                raise ValueError(f"slot name {name!r} is not an identifier")
        return value

    @model_validator(mode="after")
    def _references_exist(self) -> Contract:
        if not self.id:
            self.id = self.service
        for name, tool in self.tools.items():
            tool._action = phrase_pattern(tool.action_words or [name.replace("_", " ")])
        referenced = [action.tool for action in self.forbidden_actions]
        referenced += [fact_tool for fact in self.required_facts for fact_tool in fact.before]
        if self.success is not None:
            referenced += [entry.tool for entry in self.success.any_of if entry.tool is not None]
            if any(entry.refusal for entry in self.success.any_of) and not (
                self.persona.out_of_scope
            ):
                raise ValueError("success by refusal needs persona.out_of_scope topics")
        if self.ownership is not None:
            referenced += self.ownership.identity_tools
        for tool in self.tools.values():
            referenced += tool.alternatives
            if tool.approval is not None:
                referenced += [approval.tool for approval in tool.approval.tools]
        unknown = sorted(set(referenced) - set(self.tools))
        if unknown:
            raise ValueError(f"tools referenced but not declared under tools: {unknown}")
        return self

    def success_tools(self) -> list[str]:
        if self.success is None:
            return []
        return [entry.tool for entry in self.success.any_of if entry.tool is not None]

    def escalation_tools(self) -> set[str]:
        return {name for name, tool in self.tools.items() if tool.escalation}
