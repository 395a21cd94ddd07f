"""Production sessions from the session store as one side of the gate.

`turnwatch gate --baseline store:deployment.environment=prod,version=1.3,since=2026-11-01
--candidate store:deployment.environment=canary,version=1.4` selects each side's sessions with
the session store's filters (`SessionFilters`: `service`, `version`, `slice`, `check`, `joint`,
`critical`, `flagged`, `since`, `until`; times compare with the session's end) and resource
attributes: a key with a dot is a resource attribute the session must carry with that value
(OTel's attribute names are namespaced, so a mistyped filter is still an unknown filter).
`service.name` and `service.version` mean the `service` and `version` filters, which every
stored session has. Values cannot hold a comma (it separates the pairs). Each session counts
once, at its latest stored revision with a score record; the two sides hold different
conversations, so the gate compares them unpaired.
"""

from __future__ import annotations

from pydantic import ValidationError
from turnwatch.exporters.sessions.model import SessionFilters, key_value_pairs
from turnwatch.exporters.sessions.store import SessionStore

from turnwatch.schema import first_problem
from turnwatch.scores import ScoreRecord

PREFIX = "store:"
PAGE = 500
FILTER_ALIASES = {"service.name": "service", "service.version": "version"}
FILTERS = [name for name in SessionFilters.model_fields if name != "attributes"]


class SelectionInvalid(ValueError):
    """A selection that does not parse or names an unknown filter (the message says which)."""


def is_selection(value: str) -> bool:
    return value.startswith(PREFIX)


def parse_selection(value: str) -> SessionFilters:
    """`store:key=value,key=value` as the store's filters."""
    fields: dict[str, str] = {}
    attributes: dict[str, str] = {}
    try:
        pairs = key_value_pairs(value[len(PREFIX) :])
    except ValueError as exc:
        raise SelectionInvalid(f"{value}: {exc}") from None
    for key, text in pairs:
        if not text:
            raise SelectionInvalid(f"{value}: {key!r} has no value")
        name = FILTER_ALIASES.get(key, key)
        if name in fields or name in attributes:
            raise SelectionInvalid(f"{value}: {key!r} is given twice")
        (attributes if "." in name else fields)[name] = text
    unknown = sorted(fields.keys() - set(FILTERS))
    if unknown:
        raise SelectionInvalid(
            f"{value}: unknown filter {unknown[0]!r} (filters: {', '.join(FILTERS)}; "
            "a resource attribute has a dot, such as deployment.environment)"
        )
    try:
        return SessionFilters.model_validate({**fields, "attributes": attributes})
    except ValidationError as exc:
        raise SelectionInvalid(f"{value}: {first_problem(exc)}") from None


def check_attributes(store: SessionStore, filters: SessionFilters) -> None:
    """A selection on an attribute no stored session carries is a mistake (a misspelt key, or
    one the collector does not keep), not an empty side: SelectionInvalid says which."""
    if not filters.attributes:
        return
    stored = store.attribute_names()
    missing = sorted(filters.attributes.keys() - set(stored))
    if missing:
        raise SelectionInvalid(
            f"no stored session carries the resource attribute {missing[0]!r} (stored: "
            f"{', '.join(stored) or 'none'}; the collector keeps the attributes listed in "
            "sessions.resource_attributes)"
        )


def selection_label(filters: SessionFilters, fallback: str) -> str:
    """What the report calls the side: its version, else its attributes, else `fallback`."""
    if filters.version:
        return filters.version
    if filters.attributes:
        return ",".join(f"{name}={value}" for name, value in sorted(filters.attributes.items()))
    return fallback


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
