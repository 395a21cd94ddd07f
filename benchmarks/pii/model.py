"""Labelled texts, built piece by piece so every label's span is known by construction."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Occurrence:
    """One labelled value in one text: `text[start:end] == value`."""

    entity: str
    start: int
    end: int
    value: str
    group: str
    """Occurrences of one value (one person, one number) share a group, across formats."""
    ambiguous: bool = False
    """The value is also an ordinary word (Will, Hill): leaks are looked for with its context."""


@dataclass(frozen=True)
class NearMiss:
    """Something that looks like PII and is not: it must stay readable."""

    kind: str
    start: int
    end: int


@dataclass
class LabelledText:
    text: str = ""
    occurrences: list[Occurrence] = field(default_factory=list)
    near_misses: list[NearMiss] = field(default_factory=list)

    def say(self, *pieces: Any) -> LabelledText:
        """Append literal strings, `Value`s (labelled) and `Miss`es (near misses)."""
        for piece in pieces:
            start = len(self.text)
            if isinstance(piece, Value):
                self.text += piece.text
                self.occurrences.append(
                    Occurrence(
                        piece.entity,
                        start,
                        len(self.text),
                        piece.text,
                        piece.group,
                        piece.ambiguous,
                    )
                )
            elif isinstance(piece, Miss):
                self.text += piece.text
                self.near_misses.append(NearMiss(piece.kind, start, len(self.text)))
            else:
                self.text += str(piece)
        return self

    def check(self) -> None:
        for item in self.occurrences:
            assert self.text[item.start : item.end] == item.value, (self.text, item)
            assert item.value.strip() == item.value and item.value, item
        for miss in self.near_misses:
            for item in self.occurrences:
                assert miss.end <= item.start or item.end <= miss.start, (self.text, miss, item)


@dataclass(frozen=True)
class Value:
    entity: str
    text: str
    group: str
    ambiguous: bool = False


@dataclass(frozen=True)
class Miss:
    kind: str
    text: str


@dataclass
class LabelledTurn:
    role: str
    text: LabelledText | None = None
    calls: list[LabelledCall] = field(default_factory=list)


@dataclass
class LabelledCall:
    id: str
    name: str
    arguments: dict[str, LabelledText]
    result: dict[str, LabelledText | list[dict[str, LabelledText]]]


@dataclass
class LabelledConversation:
    conversation_id: str
    user_id: str
    turns: list[LabelledTurn]

    def texts(self) -> list[LabelledText]:
        out = []
        for turn in self.turns:
            if turn.text is not None:
                out.append(turn.text)
            for call in turn.calls:
                out += list(call.arguments.values())
                out += list(_leaves(call.result))
        return out


def _leaves(value: Any):
    if isinstance(value, LabelledText):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _leaves(item)
    elif isinstance(value, list):
        for item in value:
            yield from _leaves(item)


def plain(value: Any) -> Any:
    """A tool argument or result with its labelled texts as plain strings."""
    if isinstance(value, LabelledText):
        return value.text
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [plain(item) for item in value]
    return value
