"""Shared pieces of the OTLP protobuf and JSON decoders: limits and the decode result."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

ViewT = TypeVar("ViewT")

MAX_VALUE_DEPTH = 16
"""Nesting allowed inside one attribute value; deeper values reject the span (hostile input)."""


class Undecodable(Exception):
    """The body is not an OTLP request at all (HTTP 400 / gRPC INVALID_ARGUMENT)."""


class TooLarge(Exception):
    """The request passes a cap on its size or on what it holds (HTTP 413 / RESOURCE_EXHAUSTED);
    `reason` is the label it is counted under."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


class ItemRejected(Exception):
    """One span or log record cannot be used; the rest of the request still is."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(slots=True)
class DecodeLimits:
    """The receivers' caps, and the part of `max_values` the request being decoded has left
    (`for_request` starts a request's count; the decoders take from it)."""

    max_attribute_bytes: int = 1024 * 1024
    max_items: int = 10_000
    """Spans in a trace request, log records in a logs request."""
    max_values: int = 500_000
    """Values in one request: its items, their attributes, events and links, the elements of
    array and kvlist values, log bodies (OTLP/JSON: every JSON value, see otlp_json.py)."""
    values_left: int = 500_000

    def for_request(self) -> DecodeLimits:
        return DecodeLimits(
            self.max_attribute_bytes, self.max_items, self.max_values, self.max_values
        )

    def take(self, count: int) -> None:
        self.values_left -= count
        if self.values_left < 0:
            raise TooLarge("too_many_values", f"more than {self.max_values} values in one request")


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


Decoder = Callable[[bytes, DecodeLimits], DecodeResult]
"""An OTLP body decoder: the protobuf and JSON decoders of each signal."""

_HEX = re.compile(r"[0-9a-fA-F]*")
_ZERO = re.compile(r"0*")


def check_id(raw: str, hex_length: int, *, required: bool) -> str:
    """A hex trace or span id of exactly `hex_length` digits, as lower case; an all-zero id
    counts as absent. Only the digits: `int(raw, 16)` also took "0x...", a sign, spaces and
    underscores, so ids that no exporter sends passed as valid."""
    if not raw:
        if required:
            raise ItemRejected("missing_id")
        return ""
    if len(raw) != hex_length or _HEX.fullmatch(raw) is None:
        raise ItemRejected("invalid_id")
    if _ZERO.fullmatch(raw) is not None:
        if required:
            raise ItemRejected("invalid_id")
        return ""
    return raw.lower()
