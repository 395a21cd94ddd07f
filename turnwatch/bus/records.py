"""Topics and the bytes on them: JSON objects carrying `schema_version`, keyed by session id."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import orjson
from pydantic import BaseModel, ValidationError

from turnwatch.schema import SCHEMA_VERSION, Session

SESSIONS = "turnwatch.sessions"
SCORES = "turnwatch.scores"
INCIDENTS = "turnwatch.incidents"
DEAD_LETTER = "turnwatch.deadletter"
TOPICS = (SESSIONS, SCORES, INCIDENTS, DEAD_LETTER)

# Records on these topics are validated into a model before a handler sees them; the others
# (scores, incidents) are handed on as dicts until their schema exists, and the exporter checks.
TOPIC_MODELS: dict[str, type[BaseModel]] = {SESSIONS: Session}

Record = BaseModel | dict[str, Any]


class Output(NamedTuple):
    """One record a processor wants published: the consumer commits only after all are."""

    topic: str
    key: str
    record: Record


class RecordTooLarge(Exception):
    """The encoded record is over `bus.max_record_bytes`; it is rejected and counted."""


@dataclass(slots=True)
class Undecodable(Exception):
    """A record read from the bus that no handler can take; it goes to the dead letter topic."""

    reason: str


def topic_label(topic: str) -> str:
    """Metric label for a topic: one of the fixed topics or `other` (labels stay bounded)."""
    return topic if topic in TOPICS else "other"


def encode(record: Record, max_bytes: int) -> bytes:
    if isinstance(record, BaseModel):
        value = record.model_dump_json(exclude_none=False).encode()
    else:
        if "schema_version" not in record:
            raise ValueError("bus records carry a schema_version")
        value = orjson.dumps(record)
    if len(value) > max_bytes:
        raise RecordTooLarge(len(value))
    return value


def revision_of(record: Record) -> int | None:
    value = record.revision if isinstance(record, Session) else None
    if isinstance(record, dict):
        value = record.get("revision")
    return value if isinstance(value, int) else None


def decode(topic: str, value: bytes | None, max_bytes: int) -> Record:
    """Parse and validate one record; raise Undecodable with a reason from a fixed set."""
    if value is None:
        raise Undecodable("empty")
    if len(value) > max_bytes:
        raise Undecodable("too_large")
    try:
        data = orjson.loads(value)
    except orjson.JSONDecodeError:
        raise Undecodable("not_json") from None
    if not isinstance(data, dict):
        raise Undecodable("not_object")
    if data.get("schema_version") != SCHEMA_VERSION:
        raise Undecodable("unknown_schema_version")
    model = TOPIC_MODELS.get(topic)
    if model is None:
        return data
    try:
        return model.model_validate(data)
    except ValidationError:
        raise Undecodable("invalid") from None
