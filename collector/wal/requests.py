"""What the log keeps of an accepted OTLP request, and how replay decodes it again.

A request is logged as the body the receiver decoded (after decompression), tagged with its signal
and encoding. Replay runs it through the same decoder and the same pipeline as when it arrived,
which rebuilds exactly the sessions it fed: logging decoded observations instead would need a
serialised form of every collector record and cost more CPU per span than writing the bytes.
"""

from __future__ import annotations

from dataclasses import dataclass

from turnwatch.collector import otlp_json, otlp_proto
from turnwatch.collector.otlp_common import Decoder
from turnwatch.collector.wal.segments import Kind

DECODERS: dict[Kind, Decoder] = {
    Kind.TRACES_PROTOBUF: otlp_proto.decode_traces,
    Kind.TRACES_JSON: otlp_json.decode_traces,
    Kind.LOGS_PROTOBUF: otlp_proto.decode_logs,
    Kind.LOGS_JSON: otlp_json.decode_logs,
}
REQUEST_KINDS = frozenset(DECODERS)
TRACE_KINDS = frozenset({Kind.TRACES_PROTOBUF, Kind.TRACES_JSON})


@dataclass(frozen=True, slots=True)
class RequestBody:
    """An OTLP request body as decoded: `signal` is traces or logs, `json` its encoding."""

    signal: str
    json: bool
    data: bytes

    @property
    def kind(self) -> Kind:
        if self.signal == "traces":
            return Kind.TRACES_JSON if self.json else Kind.TRACES_PROTOBUF
        return Kind.LOGS_JSON if self.json else Kind.LOGS_PROTOBUF
