"""Production sessions from the session store as one side of the gate.

`turnwatch gate --baseline store:version=1.3,since=2026-11-01 --candidate store:version=1.4`
selects each side's sessions with the session store's filters (`SessionFilters`: `service`,
`version` (the chatbot's `service.version`), `slice`, `check`, `since`, `until`, ...; times compare
with the session's end). Each session counts once, at its latest stored revision with a score
record; sessions of two versions are different conversations, so the gate compares them unpaired.
The store keeps `service.name` and `service.version` of the resource, not every resource attribute,
so those are what a selection can name.
"""

from __future__ import annotations

from pydantic import ValidationError
from turnwatch.exporters.sessions.model import SessionFilters
from turnwatch.exporters.sessions.store import SessionStore

from turnwatch.schema import first_problem
from turnwatch.scores import ScoreRecord

PREFIX = "store:"
PAGE = 500


class SelectionInvalid(ValueError):
    """A selection that does not parse or names an unknown filter (the message says which)."""


def is_selection(value: str) -> bool:
    return value.startswith(PREFIX)


def parse_selection(value: str) -> SessionFilters:
    """`store:key=value,key=value` as the store's filters."""
    pairs = [item for item in value[len(PREFIX) :].split(",") if item.strip()]
    fields: dict[str, str] = {}
    for pair in pairs:
        key, equals, text = pair.partition("=")
        if not equals or not key.strip():
            raise SelectionInvalid(f"{value}: {pair!r} is not key=value")
        fields[key.strip()] = text.strip()
    unknown = sorted(fields.keys() - SessionFilters.model_fields.keys())
    if unknown:
        known = ", ".join(SessionFilters.model_fields)
        raise SelectionInvalid(f"{value}: unknown filter {unknown[0]!r} (known: {known})")
    try:
        return SessionFilters.model_validate(fields)
    except ValidationError as exc:
        raise SelectionInvalid(f"{value}: {first_problem(exc)}") from None


def select_records(store: SessionStore, filters: SessionFilters, limit: int) -> list[ScoreRecord]:
    """The score records of the selected sessions, newest first, at most `limit` sessions."""
    latest: dict[str, int] = {}
    offset = 0
    while len(latest) < limit:
        page = store.list(filters, PAGE, offset)
        for item in page.items:
            if item.scored and item.revision > latest.get(item.session_id, 0):
                latest[item.session_id] = item.revision
        if page.next_offset is None:
            break
        offset = page.next_offset
    records = []
    for session_id, revision in list(latest.items())[:limit]:
        stored = store.get(session_id, revision)
        if stored is not None and stored.score is not None:
            records.append(stored.score)
    return records
