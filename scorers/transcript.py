"""One pass over a session building the views several checks share (events, calls, tokens).

Every check then walks these lists once, which keeps the cost of scoring a session linear in its
number of turns.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from turnwatch.scorers.phrases import tokens

from turnwatch.schema import JsonValue, Role, Session, ToolCall, Turn
from turnwatch.tokens import value_part


@dataclass(frozen=True, slots=True)
class Call:
    turn_index: int
    order: int = field(compare=False)
    call: ToolCall = field(compare=False)

    @property
    def name(self) -> str:
        return self.call.name

    @property
    def failed(self) -> bool:
        return self.call.error is not None

    @property
    def signature(self) -> str:
        """Tool and arguments: equal for a retry or a repeat of the same call."""
        return self.name + "\x00" + json.dumps(self.call.arguments, sort_keys=True, default=str)


@dataclass(frozen=True, slots=True)
class Event:
    """A turn's text, or one of its tool calls, in the order they happened."""

    turn: Turn
    call: Call | None = None


def json_tokens(value: JsonValue) -> list[tuple[str, str]]:
    """Tokens in every string leaf and key of a JSON value (iterative: depth is untrusted)."""
    found: list[tuple[str, str]] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            found.extend(tokens(item))
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return found


def json_text(value: JsonValue) -> str:
    """The string leaves and numbers of a JSON value as one text (iterative: depth is
    untrusted), for recognising values in tool arguments and results as in messages."""
    parts: list[str] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            parts.append(item)
        elif isinstance(item, int | float) and not isinstance(item, bool):
            parts.append(f"{item:g}")
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return " ; ".join(reversed(parts))


class Transcript:
    def __init__(self, session: Session) -> None:
        self.session = session
        self.turns = sorted(session.turns, key=lambda turn: turn.index)
        self.events: list[Event] = []
        self.calls: list[Call] = []
        self.text_tokens: dict[int, list[tuple[str, str]]] = {}
        self.user_hexes: set[str] = set()
        for turn in self.turns:
            if turn.text:
                self.events.append(Event(turn))
                found = tokens(turn.text)
                self.text_tokens[turn.index] = found
                if turn.role is Role.USER:
                    self.user_hexes.update(value_part(token) for token, _ in found)
            for tool_call in turn.tool_calls:
                call = Call(turn.index, len(self.calls), tool_call)
                self.calls.append(call)
                self.events.append(Event(turn, call))

    def texts(self, role: Role) -> list[Turn]:
        return [turn for turn in self.turns if turn.role is role and turn.text]

    @property
    def last_index(self) -> int | None:
        return self.turns[-1].index if self.turns else None
