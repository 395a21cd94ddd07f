"""Topics and the records on them: one pydantic model per topic, JSON carrying `schema_version`.

Every record is validated into its topic's model before a handler sees it, so handlers take
models, never dicts: a `Session` from `turnwatch.sessions`, a `ScoreRecord` from
`turnwatch.scores`, an `Incident` from `turnwatch.incidents`, an `ObservationRecord` from
`turnwatch.observations` (the distributed layout), a `ChangelogRecord` from
`turnwatch.sessionizer.changelog` (the sessionizer members' handover state). A record that does
not validate is `Undecodable("invalid")` and goes to the dead letter topic. Records are keyed by
session id; observations (and changelog records) by a keyed digest of their conversation key (or
trace id).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, NamedTuple, TypeAlias

import orjson
from pydantic import BaseModel, Field, ValidationError

from turnwatch.incidents import Incident
from turnwatch.schema import SCHEMA_VERSION, Session, WireModel
from turnwatch.scores import ScoreRecord

SESSIONS = "turnwatch.sessions"
SCORES = "turnwatch.scores"
INCIDENTS = "turnwatch.incidents"
DEAD_LETTER = "turnwatch.deadletter"
OBSERVATIONS = "turnwatch.observations"
CHANGELOG = "turnwatch.sessionizer.changelog"
"""Per-partition state the sessionizer members hand over: keyed and partitioned like
`turnwatch.observations` (same keys, same partition count), so partition N of one holds the
state of partition N of the other (`turnwatch.collector.changelog`)."""
TOPICS = (SESSIONS, SCORES, INCIDENTS, DEAD_LETTER, OBSERVATIONS, CHANGELOG)


class DeadLetter(WireModel):
    """A record no handler could take, parked with where it came from and its bytes."""

    schema_version: Literal[1] = SCHEMA_VERSION
    reason: str
    source_topic: str
    partition: int
    offset: int
    key: str | None
    value_base64: str
    value_truncated: bool


class ObservationRecord(WireModel):
    """Decoded observations of one conversation (or one trace), sealed by the collector.

    `sealed` is the observations' JSON encrypted with a key derived from the deployment secret
    (AES-256-GCM, `turnwatch.collector.sealing`): raw content never crosses the broker readable.
    `route` says how the record was keyed: by conversation, by trace id (no key known yet), or a
    link telling the trace's owner which conversation the trace belongs to."""

    schema_version: Literal[1] = SCHEMA_VERSION
    route: Literal["conversation", "trace", "link"]
    record_id: str = Field(min_length=16, max_length=64)
    """Unique per record: tells a redelivery from the next record of the same key."""
    sealed: str = Field(min_length=1)


class ChangelogRecord(WireModel):
    """What a sessionizer member tells the next owner of a partition: a conversation's last
    revision, or which conversation a trace belongs to. Sealed like observations (keys and links
    come from conversation and user ids); `kind` is authenticated with the content."""

    schema_version: Literal[1] = SCHEMA_VERSION
    kind: Literal["conversation", "link"]
    sealed: str = Field(min_length=1)


# Consumers subscribe to these topics only: a topic without a model is a wiring error, not bad data.
TOPIC_MODELS: dict[str, type[BaseModel]] = {
    SESSIONS: Session,
    SCORES: ScoreRecord,
    INCIDENTS: Incident,
    DEAD_LETTER: DeadLetter,
    OBSERVATIONS: ObservationRecord,
    CHANGELOG: ChangelogRecord,
}

Record: TypeAlias = BaseModel
ExporterRecord = ScoreRecord | Incident
"""What the exporter role's handlers receive: the models of `turnwatch.scores` and `.incidents`."""


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


class WrongRecord(TypeError):
    """A processor returned a record that is not its topic's model (a plugin bug)."""


def check_output(output: Output) -> None:
    model = TOPIC_MODELS.get(output.topic)
    if model is None or not isinstance(output.record, model):
        expected = model.__name__ if model is not None else "nothing (unknown topic)"
        raise WrongRecord(
            f"{topic_label(output.topic)} takes {expected}, not {type(output.record).__name__}"
        )


def encode(record: Record, max_bytes: int) -> bytes:
    if not isinstance(record, BaseModel):
        # A plugin returning a dict would publish whatever it holds: only models go out.
        raise TypeError(f"bus records are pydantic models, not {type(record).__name__}")
    value = record.model_dump_json().encode()
    if len(value) > max_bytes:
        raise RecordTooLarge(len(value))
    return value


def revision_of(record: Record) -> int | str | None:
    """What tells two records of one key apart when deduplicating: the revision, and for a score
    record that comes in two parts (checks, then judged), the part as well."""
    if isinstance(record, ScoreRecord):
        return record.delivery()
    if isinstance(record, ObservationRecord):
        return record.record_id
    value = getattr(record, "revision", None)
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
    try:
        return TOPIC_MODELS[topic].model_validate(data)
    except ValidationError:
        raise Undecodable("invalid") from None
