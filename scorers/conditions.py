"""Tests on values inside tool arguments and results, addressed by dotted paths.

A path is dotted (`items.0.sku`); in the paths that name record fields (ownership) a `*` stands
for every item of a list (`authorised_users.*.customer_id`). Regular expressions in contracts are
validated when the contract loads (`Regex`), so a check never meets one that does not compile.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, model_validator

from turnwatch.schema import JsonValue
from turnwatch.section import Section

_MISSING = object()


def _compiles(value: str) -> str:
    try:
        re.compile(value)
    except re.error as exc:
        raise ValueError(f"invalid regular expression: {exc}") from exc
    return value


Regex = Annotated[str, AfterValidator(_compiles)]
"""A regular expression from a contract (matched case-insensitively by the checks)."""


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
            _compiles(self.value)
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


def values_at(document: JsonValue, path: str) -> list[JsonValue]:
    """Every value at `path`, where `*` fans out over the items of a list (or values of a map)."""
    current: list[Any] = [document]
    for part in path.split("."):
        following: list[Any] = []
        for item in current:
            if part == "*":
                if isinstance(item, list):
                    following.extend(item)
                elif isinstance(item, dict):
                    following.extend(item.values())
            elif isinstance(item, dict) and part in item:
                following.append(item[part])
            elif isinstance(item, list) and part.isdigit() and int(part) < len(item):
                following.append(item[int(part)])
        current = following
    return [value for value in current if value is not None]
