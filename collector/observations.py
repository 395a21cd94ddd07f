"""What crosses `turnwatch.observations`: decoded observations and trace links, sealed.

The payload is the collector's own records (`records.py`), validated by pydantic on the way back
in, so a sessionizer buffers exactly what an embedded collector would have buffered. Content a
decoder deferred is parsed before sealing: the sampling decision is the sessionizer's now.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Literal

from pydantic import ConfigDict, TypeAdapter, ValidationError
from turnwatch.collector.records import Context, Observation
from turnwatch.collector.sealing import Sealer, Unsealable

from turnwatch.bus.records import ObservationRecord

Route = Literal["conversation", "trace", "link"]
TRACE_MAPPING_SOURCE = "trace_mapping"


@dataclass(slots=True)
class RoutedObservation:
    """One span's or log record's facts, as `Sessionizer.add` takes them."""

    trace_id: str
    time_ns: int
    context: Context
    observation: Observation | None


@dataclass(slots=True)
class TraceLink:
    """Trace `trace_id` belongs to conversation `conversation_key` (a span said so)."""

    trace_id: str
    conversation_key: str


# `Observation.content` is typed with the decoders' deferred-content class; what is sealed has
# it parsed (None), so pydantic only needs to accept the type, never to encode one.
OBSERVATIONS = TypeAdapter(list[RoutedObservation], config=ConfigDict(arbitrary_types_allowed=True))
LINKS = TypeAdapter(list[TraceLink])


class BadObservations(Exception):
    """A record on the observations topic that this deployment cannot read; the reason is
    one of a fixed set (`unsealable`, `invalid`)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def resolve(item: RoutedObservation, conversation_key: str) -> None:
    """A span without a key joins the conversation its trace was mapped to."""
    item.context.conversation_key = conversation_key
    item.context.key_source = TRACE_MAPPING_SOURCE


class ObservationCodec:
    def __init__(self, sealer: Sealer) -> None:
        self.sealer = sealer

    def route_key(self, route: Route, value: str) -> str:
        # A link travels to its trace's owner, so it is keyed like the trace's observations.
        return self.sealer.route_key("trace" if route == "link" else route, value)

    def seal_observations(self, route: Route, items: list[RoutedObservation]) -> ObservationRecord:
        for item in items:
            if item.observation is not None and item.observation.content is not None:
                # A routing collector never compares calls (`drop_known` is the sessionizer's),
                # so the parsed copy holds each call's whole input and no `resends` link.
                item.observation = item.observation.parsed()
        return self._seal(route, OBSERVATIONS.dump_json(items))

    def seal_links(self, links: list[TraceLink]) -> ObservationRecord:
        return self._seal("link", LINKS.dump_json(links))

    def _seal(self, route: Route, payload: bytes) -> ObservationRecord:
        sealed = self.sealer.seal(payload, route.encode())
        return ObservationRecord(route=route, record_id=uuid.uuid4().hex, sealed=sealed)

    def open_observations(self, record: ObservationRecord) -> list[RoutedObservation]:
        return self._open(record, OBSERVATIONS)

    def open_links(self, record: ObservationRecord) -> list[TraceLink]:
        return self._open(record, LINKS)

    def _open(self, record: ObservationRecord, adapter: TypeAdapter):
        try:
            payload = self.sealer.open(record.sealed, record.route.encode())
        except Unsealable:
            raise BadObservations("unsealable") from None
        try:
            return adapter.validate_json(payload)
        except ValidationError:
            raise BadObservations("invalid") from None
