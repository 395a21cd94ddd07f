"""Conversation contracts: what one chatbot service may do, must do, and must not do.

One YAML file per service (matched on `service.name`); the format is documented in
`scorers/README.md`. Everything a check needs from the contract is validated here, at load time, so
a check never meets a malformed contract at scoring time.
"""

from __future__ import annotations

import re
from typing import Any, Literal

import jsonschema
from pydantic import Field, PrivateAttr, field_validator, model_validator

from turnwatch.entities import EntityName
from turnwatch.schema import JsonValue
from turnwatch.section import Section

IDENTIFIER = r"^[A-Za-z][A-Za-z0-9_.-]{0,63}$"

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
]

_MISSING = object()


class Condition(Section):
    """A test on one value inside tool arguments or a tool result, addressed by a dotted path."""

    path: str = Field(min_length=1, description="Dotted path; list items by number (`items.0`).")
    op: Literal["eq", "ne", "gt", "ge", "lt", "le", "in", "not_in", "exists", "matches"] = "eq"
    value: JsonValue = None

    @model_validator(mode="after")
    def _value_fits_op(self) -> Condition:
        if self.op in ("gt", "ge", "lt", "le") and not _is_number(self.value):
            raise ValueError(f"op {self.op} needs a number value")
        if self.op in ("in", "not_in") and not isinstance(self.value, list):
            raise ValueError(f"op {self.op} needs a list value")
        if self.op == "matches":
            if not isinstance(self.value, str):
                raise ValueError("op matches needs a regular expression string")
            try:
                re.compile(self.value)
            except re.error as exc:
                raise ValueError(f"invalid regular expression: {exc}") from exc
        return self

    def holds(self, document: JsonValue) -> bool:
        found = _lookup(document, self.path)
        if self.op == "exists":
            return found is not _MISSING
        if found is _MISSING:
            return False
        match self.op:
            case "eq":
                return found == self.value
            case "ne":
                return found != self.value
            case "in":
                return found in self.value
            case "not_in":
                return found not in self.value
            case "matches":
                return isinstance(found, str) and re.search(self.value, found) is not None
        if not _is_number(found):
            return False
        match self.op:
            case "gt":
                return found > self.value
            case "ge":
                return found >= self.value
            case "lt":
                return found < self.value
        return found <= self.value

    def describe(self) -> str:
        """Contract-side words only: safe to put in an explanation."""
        return self.path if self.op == "exists" else f"{self.path} {self.op} {self.value!r}"


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _lookup(document: JsonValue, path: str) -> Any:
    current = document
    for part in path.split("."):
        if isinstance(current, dict) and part in current:
            current = current[part]
        elif isinstance(current, list) and part.isdigit() and int(part) < len(current):
            current = current[int(part)]
        else:
            return _MISSING
    return current


def all_hold(conditions: list[Condition], document: JsonValue) -> bool:
    return all(condition.holds(document) for condition in conditions)


class ApprovalTool(Section):
    tool: str = Field(description="The tool whose successful call grants the approval.")
    result: list[Condition] = Field(
        default_factory=list, description="Conditions its result must meet (e.g. status eq)."
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
        description="An explicit yes from the user after the assistant asked to confirm.",
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
    _validator: jsonschema.Draft202012Validator = PrivateAttr()

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


class SuccessCall(Section):
    tool: str
    result: list[Condition] = Field(
        default_factory=list, description="The state its result must show."
    )
    final: bool = Field(default=False, description="It must be the session's last tool call.")


class Success(Section):
    any_of: list[SuccessCall] = Field(min_length=1)


class Budgets(Section):
    max_user_turns: int | None = Field(default=None, gt=0)
    max_session_latency_ms: float | None = Field(default=None, gt=0)
    max_turn_latency_ms: float | None = Field(default=None, gt=0)
    max_tokens: int | None = Field(default=None, gt=0)
    max_cost_usd: float | None = Field(default=None, gt=0)


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
    fact_questions: dict[EntityName, str] = Field(
        default_factory=dict,
        description="Token type -> regular expression for how the bot asks for that fact; "
        "added to the built-in ones.",
    )
    critical: list[CheckName] = Field(default_factory=lambda: list(DEFAULT_CRITICAL))

    @field_validator("fact_questions")
    @classmethod
    def _compiles(cls, value: dict[str, str]) -> dict[str, str]:
        for entity, pattern in value.items():
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"{entity}: invalid regular expression: {exc}") from exc
        return value

    @model_validator(mode="after")
    def _references_exist(self) -> Contract:
        if not self.id:
            self.id = self.service
        referenced = [action.tool for action in self.forbidden_actions]
        referenced += [fact_tool for fact in self.required_facts for fact_tool in fact.before]
        if self.success is not None:
            referenced += [call.tool for call in self.success.any_of]
        for tool in self.tools.values():
            if tool.approval is not None:
                referenced += [approval.tool for approval in tool.approval.tools]
        unknown = sorted(set(referenced) - set(self.tools))
        if unknown:
            raise ValueError(f"tools referenced but not declared under tools: {unknown}")
        return self

    def success_tools(self) -> list[str]:
        return [] if self.success is None else [call.tool for call in self.success.any_of]

    def escalation_tools(self) -> set[str]:
        return {name for name, tool in self.tools.items() if tool.escalation}
