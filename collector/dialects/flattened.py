"""Helpers for dialects that flatten lists of messages into indexed attribute keys."""

from __future__ import annotations

from typing import Any


def indexed(attributes: dict[str, Any], prefix: str) -> list[dict[str, Any]]:
    """Group `prefix.{i}.rest` keys into one dict per index, ordered by index.

    `{"a.0.x": 1, "a.1.x": 2, "a.0.y": 3}` with prefix "a" gives `[{"x": 1, "y": 3}, {"x": 2}]`.
    """
    head = prefix + "."
    groups: dict[int, dict[str, Any]] = {}
    for key, value in attributes.items():
        if not key.startswith(head):
            continue
        index_text, _, rest = key[len(head) :].partition(".")
        if not (index_text.isascii() and index_text.isdecimal()) or not rest:
            continue
        groups.setdefault(int(index_text), {})[rest] = value
    return [groups[index] for index in sorted(groups)]


def has_prefix(attributes: dict[str, Any], *prefixes: str) -> bool:
    return any(key.startswith(prefixes) for key in attributes)
