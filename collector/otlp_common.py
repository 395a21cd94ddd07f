"""Shared pieces of the OTLP protobuf and JSON decoders: limits and the decode result."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Generic, TypeVar

ViewT = TypeVar("ViewT")

MAX_VALUE_DEPTH = 16
"""Nesting allowed inside one attribute value; deeper values reject the span (hostile input)."""


class Undecodable(Exception):
    """The body is not an OTLP request at all (HTTP 400 / gRPC INVALID_ARGUMENT)."""


class ItemRejected(Exception):
    """One span or log record cannot be used; the rest of the request still is."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(slots=True)
class DecodeLimits:
    max_attribute_bytes: int = 1024 * 1024


@dataclass(slots=True)
class DecodeResult(Generic[ViewT]):
    items: list[ViewT] = field(default_factory=list)
    rejected: int = 0
    rejection_reasons: dict[str, int] = field(default_factory=dict)

    def reject(self, reason: str, count: int = 1) -> None:
        if count:
            self.rejected += count
            self.rejection_reasons[reason] = self.rejection_reasons.get(reason, 0) + count

    def error_message(self) -> str:
        """A partial_success message naming reasons and counts, never content."""
        parts = [f"{count} {reason}" for reason, count in sorted(self.rejection_reasons.items())]
        return "rejected: " + ", ".join(parts) if parts else ""


def check_id(raw: str, hex_length: int, *, required: bool) -> str:
    """Validate a lower-case hex trace or span id; an all-zero id counts as absent."""
    if not raw:
        if required:
            raise ItemRejected("missing_id")
        return ""
    if len(raw) != hex_length:
        raise ItemRejected("invalid_id")
    try:
        if int(raw, 16) == 0:
            if required:
                raise ItemRejected("invalid_id")
            return ""
    except ValueError:
        raise ItemRejected("invalid_id") from None
    return raw
