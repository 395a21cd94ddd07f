"""Whose records a session's tool results are (the contract's `ownership` fields).

The session's user is identified by their user id and by the owner fields of their own records:
the results of identity tools (a verification lookup), and every record whose owner fields name
them (so a record that names the user only by name is theirs too). A record is the user's own
when its owner fields name the user, shared when its co-owner fields do, and another customer's
when it names an owner and neither does. Values compare by pseudonym value part (a token inside a
string counts, so "Isabel <PERSON_...>" and "<PERSON_...>" are one name), or as text.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from turnwatch.scorers.conditions import values_at
from turnwatch.scorers.contract import Ownership
from turnwatch.scorers.phrases import tokens
from turnwatch.scorers.scorer import Context
from turnwatch.scorers.transcript import Call, json_tokens

from turnwatch.schema import JsonValue
from turnwatch.tokens import value_part


def identity_keys(value: JsonValue) -> set[str]:
    """What identifies a person in an owner field: its tokens' value parts, else its text."""
    found: set[str] = set()
    for item in value if isinstance(value, list) else [value]:
        if isinstance(item, str):
            inner = {value_part(token) for token, _ in tokens(item)}
            found |= inner or {item.strip().casefold()}
        elif isinstance(item, int | float) and not isinstance(item, bool):
            found.add(f"{item:g}")
    return found


def _field_keys(result: JsonValue, paths: list[str]) -> tuple[set[str], list[str]]:
    """(identity keys, the tokens among them) at the given paths of a tool result."""
    keys: set[str] = set()
    shown: list[str] = []
    for path in paths:
        for value in values_at(result, path):
            keys |= identity_keys(value)
            shown += [token for token, _ in json_tokens(value)]
    return keys, shown


@dataclass(frozen=True, slots=True)
class ForeignRecord:
    call: Call
    owner: str | None
    """The owner's token (e.g. <ACCOUNT_ID_...>), when the owner field holds one."""
    hexes: frozenset[str]
    """Value parts of every token in the record."""


@dataclass(slots=True)
class Records:
    identity: set[str] = field(default_factory=set)
    """Keys that identify the session's user."""
    own_hexes: set[str] = field(default_factory=set)
    """Value parts of every token in the user's own and shared records."""
    confirmed_hexes: set[str] = field(default_factory=set)
    """Value parts in the user's own records (primary owner): theirs for certain."""
    foreign: list[ForeignRecord] = field(default_factory=list)


def records(ctx: Context) -> Records:
    return ctx.view("ownership.records", lambda: _records(ctx))


def _records(ctx: Context) -> Records:
    contract = ctx.contract
    found = Records()
    if ctx.session.user_id is not None:
        found.identity |= identity_keys(ctx.session.user_id)
    if contract is None or contract.ownership is None:
        return found
    ownership = contract.ownership
    calls = [call for call in ctx.transcript.calls if not call.failed]
    for call in calls:
        if call.name in ownership.identity_tools:
            keys, _ = _field_keys(call.call.result, ownership.owner_fields)
            found.identity |= keys
    # A record naming the user by id can name them by name too: two passes settle it.
    for _ in range(2):
        for call in calls:
            owners, _ = _field_keys(call.call.result, ownership.owner_fields)
            if owners & found.identity:
                found.identity |= owners
    for call in calls:
        _classify(call, ownership, found)
    return found


def _classify(call: Call, ownership: Ownership, found: Records) -> None:
    result = call.call.result
    owners, shown = _field_keys(result, ownership.owner_fields)
    if not owners:
        return
    hexes = {value_part(token) for token, _ in json_tokens(result)}
    co_owners, _ = _field_keys(result, ownership.co_owner_fields)
    if owners & found.identity:
        found.own_hexes |= hexes
        found.confirmed_hexes |= hexes
    elif co_owners & found.identity:
        found.own_hexes |= hexes
    else:
        found.foreign.append(ForeignRecord(call, shown[0] if shown else None, frozenset(hexes)))
