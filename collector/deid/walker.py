"""Visit every piece of free text in a Session, and rebuild the Session with replacements.

The same walk serves twice: once to collect the texts (with where each one is) for analysis,
once to substitute. Each text comes with its `Place`: the turn and role it is in, and for a JSON
value in tool arguments or results its key and the keys beside it, which is how field rules
tell a passenger's name from a product's. Anything the walk cannot vouch for (an over-long text,
JSON nested too deep, a value that is not JSON, text that is not valid Unicode) raises
InvalidInput: the session is quarantined rather than forwarded with a part left unexamined.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from turnwatch.schema import JsonValue, Role, Session

# Integers this long may be phone, card or account numbers sent as JSON numbers.
MIN_NUMBER_DIGITS = 6
IDENTIFIER_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]{0,63}")


@dataclass(frozen=True, slots=True)
class Place:
    turn: int | None = None
    """Position of the turn in the session's turn list; None outside turns."""
    role: Role | None = None
    key: str | None = None
    """For a JSON value: the key it is under (the nearest one, through lists)."""
    siblings: frozenset[str] = frozenset()
    number: bool = False
    """A JSON integer, offered as its decimal digits."""
    turn_text: bool = False
    """The turn's message text (what the conversation around it is read from)."""


TextMap = Callable[[str, Place], str]


class InvalidInput(Exception):
    pass


class SessionWalker:
    def __init__(self, raw_fields: list[str], max_text_chars: int, max_json_depth: int) -> None:
        self.raw = frozenset(raw_fields)
        self.max_text_chars = max_text_chars
        self.max_json_depth = max_json_depth

    def map(self, session: Session, fn: TextMap) -> Session:
        """A deep copy of `session` with `fn` applied to every text field not kept raw."""
        text = self._checked(fn)
        out = session.model_copy(deep=True)
        outside = Place()
        out.system_instructions = [text(item, outside) for item in out.system_instructions]
        if "service" not in self.raw:
            out.service = text(out.service, outside)
        if "provenance" not in self.raw:
            p = out.provenance
            p.providers = [text(item, outside) for item in p.providers]
            p.models = [text(item, outside) for item in p.models]
            p.service_version = self._optional(text, p.service_version, outside)
            p.agent_name = self._optional(text, p.agent_name, outside)
            p.agent_version = self._optional(text, p.agent_version, outside)
            p.resource_attributes = {
                key: text(value, outside) for key, value in p.resource_attributes.items()
            }
        for number, turn in enumerate(out.turns):
            place = Place(turn=number, role=turn.role)
            turn.text = self._optional(text, turn.text, Place(number, turn.role, turn_text=True))
            if "turns.name" not in self.raw:
                turn.name = self._optional(text, turn.name, place)
            if "turns.model" not in self.raw:
                turn.model = self._optional(text, turn.model, place)
            if "turns.finish_reason" not in self.raw:
                turn.finish_reason = self._optional(text, turn.finish_reason, place)
            for call in turn.tool_calls:
                if "tool_calls.name" not in self.raw:
                    call.name = text(call.name, place)
                call.error = self._optional(text, call.error, place)
                call.arguments = self._json(call.arguments, text, place, 0)
                call.result = self._json(call.result, text, place, 0)
        return out

    def _checked(self, fn: TextMap) -> TextMap:
        def apply(value: str, place: Place) -> str:
            if len(value) > self.max_text_chars:
                raise InvalidInput("text_too_long")
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                raise InvalidInput("invalid_unicode") from None
            return fn(value, place)

        return apply

    @staticmethod
    def _optional(fn: TextMap, value: str | None, place: Place) -> str | None:
        return None if value is None else fn(value, place)

    def _json(self, value: JsonValue, fn: TextMap, place: Place, depth: int) -> JsonValue:
        if depth > self.max_json_depth:
            raise InvalidInput("json_too_deep")
        if isinstance(value, str):
            return fn(value, place)
        if isinstance(value, bool) or value is None or isinstance(value, float):
            return value
        if isinstance(value, int):
            digits = str(value)
            number = Place(place.turn, place.role, place.key, place.siblings, number=True)
            replaced = fn(digits, number)
            return value if replaced == digits else replaced
        if isinstance(value, list):
            return [self._json(item, fn, place, depth + 1) for item in value]
        if isinstance(value, dict):
            siblings = frozenset(key for key in value if isinstance(key, str))
            return {
                self._json_key(key, fn, place): self._json(
                    item, fn, Place(place.turn, place.role, key, siblings), depth + 1
                )
                for key, item in value.items()
            }
        raise InvalidInput("not_json")

    @staticmethod
    def _json_key(key: object, fn: TextMap, place: Place) -> str:
        # Keys that could hold PII are analysed (`{"jane@example.com": ...}` happens); plain
        # identifiers such as `order_id` are schema, and NER mistakes them for names.
        if not isinstance(key, str):
            raise InvalidInput("not_json")
        if IDENTIFIER_KEY.fullmatch(key):
            return key
        return fn(key, place)
