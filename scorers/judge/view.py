"""The session as a judge reads it: numbered one-line turns, exchanges, and a token estimate.

Turns keep their session index (`[7] assistant: ...`) so every verdict names a turn the record
can point at. Only user and assistant turns are shown; tool activity appears as the names of the
tools called (arguments and results cost tokens and judges do not need them for these metrics).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from turnwatch.schema import Role, Session

_SPACE = re.compile(r"\s+")
CUT_MARK = " [...]"


def estimate_tokens(text: str) -> int:
    """About 4 characters per token for English (no tokenizer ships offline); errs high on
    short strings so the context guard keeps a margin."""
    return len(text) // 4 + 1


@dataclass(frozen=True, slots=True)
class Line:
    index: int
    role: Role
    text: str

    def render(self) -> str:
        return f"[{self.index}] {self.role.value}: {self.text}"


@dataclass(slots=True)
class Exchange:
    """One unit: user turn(s) then the assistant turn(s) answering them."""

    user: list[Line] = field(default_factory=list)
    assistant: list[Line] = field(default_factory=list)

    @property
    def lines(self) -> list[Line]:
        return sorted([*self.user, *self.assistant], key=lambda line: line.index)

    @property
    def last_index(self) -> int:
        return self.lines[-1].index


def lines(session: Session, max_chars: int) -> list[Line]:
    found = []
    for turn in sorted(session.turns, key=lambda turn: turn.index):
        if turn.role not in (Role.USER, Role.ASSISTANT):
            continue
        text = _SPACE.sub(" ", turn.text or "").strip()
        if turn.tool_calls:
            names = ", ".join(call.name for call in turn.tool_calls)
            text = f"(calls {names}) {text}".rstrip()
        if not text:
            continue
        if len(text) > max_chars:
            text = text[:max_chars] + CUT_MARK
        found.append(Line(turn.index, turn.role, text))
    return found


def exchanges(all_lines: list[Line]) -> list[Exchange]:
    """Units as DeepEval forms them: a new one at each user turn after an assistant turn; an
    opening assistant greeting joins the first unit; a trailing unanswered user turn is dropped."""
    units: list[Exchange] = []
    current = Exchange()
    for line in all_lines:
        if line.role is Role.USER and current.assistant and current.user:
            units.append(current)
            current = Exchange()
        if line.role is Role.USER:
            current.user.append(line)
        else:
            current.assistant.append(line)
    if current.user and current.assistant:
        units.append(current)
    return units


def render(selected: list[Line]) -> str:
    return "\n".join(line.render() for line in selected)


def pack(items: list[str], budget_chars: int) -> list[list[int]]:
    """Group item positions into consecutive batches of at most budget_chars each (an item larger
    than the budget gets a batch of its own; the judge's context guard then refuses it)."""
    batches: list[list[int]] = []
    size = 0
    for position, item in enumerate(items):
        cost = len(item) + 1
        if batches and size + cost <= budget_chars:
            batches[-1].append(position)
            size += cost
        else:
            batches.append([position])
            size = cost
    return batches
