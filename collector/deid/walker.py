"""Visit every piece of free text in a Session, and rebuild the Session with replacements.

The same walk serves twice: once to collect the texts for batched analysis, once to substitute.
Anything the walk cannot vouch for (an over-long text, JSON nested too deep, a value that is not
JSON, text that is not valid Unicode) raises InvalidInput: the session is quarantined rather than
forwarded with a part left unexamined.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from turnwatch.schema import JsonValue, Session

# Integers this long may be phone, card or account numbers sent as JSON numbers.
MIN_NUMBER_DIGITS = 6
IDENTIFIER_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]{0,63}")

TextMap = Callable[[str], str]
# Called instead of TextMap for a JSON string under a key listed in `field_entities`.
FieldMap = Callable[[str, str], str]


class InvalidInput(Exception):
    pass


class SessionWalker:
    def __init__(
        self,
        raw_fields: list[str],
        field_entities: dict[str, str],
        max_text_chars: int,
        max_json_depth: int,
    ) -> None:
        self.raw = frozenset(raw_fields)
        self.field_entities = field_entities
        self.max_text_chars = max_text_chars
        self.max_json_depth = max_json_depth

    def map(self, session: Session, fn: TextMap, field_fn: FieldMap | None = None) -> Session:
        """A deep copy of `session` with `fn` applied to every text field not kept raw."""
        text = self._checked(fn)
        known = self._checked_field(field_fn) if field_fn is not None else None
        out = session.model_copy(deep=True)
        out.system_instructions = [text(item) for item in out.system_instructions]
        if "service" not in self.raw:
            out.service = text(out.service)
        if "provenance" not in self.raw:
            p = out.provenance
            p.providers = [text(item) for item in p.providers]
            p.models = [text(item) for item in p.models]
            p.service_version = self._optional(text, p.service_version)
            p.agent_name = self._optional(text, p.agent_name)
            p.agent_version = self._optional(text, p.agent_version)
        for turn in out.turns:
            turn.text = self._optional(text, turn.text)
            if "turns.name" not in self.raw:
                turn.name = self._optional(text, turn.name)
            if "turns.model" not in self.raw:
                turn.model = self._optional(text, turn.model)
            if "turns.finish_reason" not in self.raw:
                turn.finish_reason = self._optional(text, turn.finish_reason)
            for call in turn.tool_calls:
                if "tool_calls.name" not in self.raw:
                    call.name = text(call.name)
                call.error = self._optional(text, call.error)
                call.arguments = self._json(call.arguments, text, known, 0)
                call.result = self._json(call.result, text, known, 0)
        return out

    def _checked(self, fn: TextMap) -> TextMap:
        def apply(value: str) -> str:
            if len(value) > self.max_text_chars:
                raise InvalidInput("text_too_long")
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                raise InvalidInput("invalid_unicode") from None
            return fn(value)

        return apply

    def _checked_field(self, fn: FieldMap) -> FieldMap:
        def apply(value: str, entity: str) -> str:
            self._checked(lambda checked: checked)(value)
            return fn(value, entity)

        return apply

    @staticmethod
    def _optional(fn: TextMap, value: str | None) -> str | None:
        return None if value is None else fn(value)

    def _json(self, value: JsonValue, fn: TextMap, known: FieldMap | None, depth: int) -> JsonValue:
        if depth > self.max_json_depth:
            raise InvalidInput("json_too_deep")
        if isinstance(value, str):
            return fn(value)
        if isinstance(value, bool) or value is None or isinstance(value, float):
            return value
        if isinstance(value, int):
            if len(str(abs(value))) < MIN_NUMBER_DIGITS:
                return value
            replaced = fn(str(value))
            return value if replaced == str(value) else replaced
        if isinstance(value, list):
            return [self._json(item, fn, known, depth + 1) for item in value]
        if isinstance(value, dict):
            # Keys that could hold PII are analysed (`{"jane@example.com": ...}` happens); plain
            # identifiers such as `order_id` are schema, and NER mistakes them for names.
            return {
                self._json_key(key, fn): self._field(key, item, fn, known, depth)
                for key, item in value.items()
            }
        raise InvalidInput("not_json")

    def _field(
        self, key: object, item: JsonValue, fn: TextMap, known: FieldMap | None, depth: int
    ) -> JsonValue:
        entity = self.field_entities.get(key.casefold()) if isinstance(key, str) else None
        if entity is not None and known is not None and isinstance(item, str) and item.strip():
            return known(item, entity)
        return self._json(item, fn, known, depth + 1)

    @staticmethod
    def _json_key(key: object, fn: TextMap) -> str:
        if not isinstance(key, str):
            raise InvalidInput("not_json")
        if IDENTIFIER_KEY.fullmatch(key):
            return key
        return fn(key)
