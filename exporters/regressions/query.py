"""Filtering and keyset pagination of case summaries (shared by the API and the CLI).

Newest first: ordered by (last_seen, id) descending. The cursor is the (last_seen, id) of the
last item returned, so a page boundary stays put when new cases arrive while a client pages.
A cursor comes back from the client, so it is read strictly: url-safe base64 of at most
MAX_CURSOR_CHARS characters, holding exactly a JSON list of a time with its UTC offset and a
case id; anything else is BadCursor (400), never an exception from deep inside the JSON parser
(a cursor of nested brackets raised RecursionError, a 500).
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from dataclasses import dataclass
from datetime import datetime

from turnwatch.exporters.regressions.model import CaseSummary, iso
from turnwatch.exporters.regressions.store import _valid_id as valid_case_id

MAX_CURSOR_CHARS = 200
_CURSOR = re.compile(r"[A-Za-z0-9_-]+")


class BadCursor(ValueError):
    pass


@dataclass(frozen=True)
class Filters:
    service: str | None = None
    check: str | None = None
    slice: str | None = None
    since: datetime | None = None
    until: datetime | None = None

    def match(self, item: CaseSummary) -> bool:
        seen = item.last_seen
        return (
            (self.service is None or item.service == self.service)
            # A signature's check can be several critical checks joined with "+".
            and (self.check is None or self.check in item.check.split("+"))
            and (self.slice is None or self.slice in item.slices)
            and (self.since is None or seen >= self.since)
            and (self.until is None or seen < self.until)
        )


@dataclass(frozen=True)
class Page:
    items: list[CaseSummary]
    total: int
    next_cursor: str | None


def _key(item: CaseSummary) -> tuple[datetime, str]:
    return item.last_seen, item.id


def encode_cursor(item: CaseSummary) -> str:
    raw = json.dumps([iso(item.last_seen), item.id]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[datetime, str]:
    if len(cursor) > MAX_CURSOR_CHARS or _CURSOR.fullmatch(cursor) is None:
        raise BadCursor("invalid cursor")
    try:
        decoded = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (binascii.Error, ValueError, RecursionError) as exc:
        raise BadCursor("invalid cursor") from exc
    if not (
        isinstance(decoded, list)
        and len(decoded) == 2
        and all(isinstance(part, str) for part in decoded)
        and valid_case_id(decoded[1])
    ):
        raise BadCursor("invalid cursor")
    try:
        last_seen = datetime.fromisoformat(decoded[0])
    except ValueError as exc:
        raise BadCursor("invalid cursor") from exc
    if last_seen.utcoffset() is None:
        raise BadCursor("invalid cursor")
    return last_seen, decoded[1]


def paginate(
    summaries: list[CaseSummary], filters: Filters, limit: int, cursor: str | None = None
) -> Page:
    matched = sorted((s for s in summaries if filters.match(s)), key=_key, reverse=True)
    start = 0
    if cursor:
        after = decode_cursor(cursor)
        start = next((i for i, item in enumerate(matched) if _key(item) < after), len(matched))
    items = matched[start : start + limit]
    more = start + limit < len(matched)
    return Page(items, len(matched), encode_cursor(items[-1]) if more and items else None)
