"""Structured logs: one JSON object a line on stderr. Callers pass ids and counts, never text."""

from __future__ import annotations

import logging
import sys
import time
from datetime import UTC, datetime

import orjson

_STANDARD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {
    "message",
    "asctime",
    "color_message",
}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, object] = {
            "ts": datetime.fromtimestamp(record.created, tz=UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "event": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key not in _STANDARD and not key.startswith("_"):
                entry[key] = value
        if record.exc_info and record.exc_info[0] is not None:
            # The exception type only: messages of parser errors can quote the input.
            entry["exception"] = record.exc_info[0].__name__
        return orjson.dumps(entry, default=str).decode()


def configure_logging(level: str) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    for noisy in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        logging.getLogger(noisy).handlers[:] = []
        logging.getLogger(noisy).propagate = True
    logging.getLogger("uvicorn.error").setLevel(logging.WARNING)
    logging.getLogger("uvicorn.access").setLevel(logging.WARNING)


class RateLimitedLog:
    """Warnings about what clients send, at most one per `interval_seconds` for each event and
    reason: a flood of bad requests must not become a flood of log lines. The record that ends
    a quiet interval says how many were held back (`suppressed`); metrics count every one."""

    def __init__(self, logger: logging.Logger, interval_seconds: float = 10.0) -> None:
        self.logger = logger
        self.interval_seconds = interval_seconds
        self._next: dict[tuple[str, str], float] = {}
        self._held: dict[tuple[str, str], int] = {}

    def warning(self, event: str, reason: str, **extra: object) -> None:
        key = (event, reason)
        now = time.monotonic()
        if now < self._next.get(key, 0.0):
            self._held[key] = self._held.get(key, 0) + 1
            return
        if len(self._next) > 1000:  # reasons come from fixed sets; this is only a backstop
            self._next.clear()
        self._next[key] = now + self.interval_seconds
        suppressed = self._held.pop(key, 0)
        self.logger.warning(event, extra={"reason": reason, "suppressed": suppressed, **extra})
