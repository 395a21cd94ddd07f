"""Verdict cache: the same prompt version, model and input get the same verdict without a call.

Keys hash the whole request, so a session revision that appends turns re-judges only the batches
whose input changed (metrics align their batches to fixed positions for this reason). Bounded LRU.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from typing import Any

import orjson


def cache_key(prompt_version: str, model: str, payload: Any) -> str:
    blob = orjson.dumps([prompt_version, model, payload], option=orjson.OPT_SORT_KEYS)
    return hashlib.sha256(blob).hexdigest()


class VerdictCache:
    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[str, Any] = OrderedDict()

    def get(self, key: str) -> Any | None:
        value = self._items.get(key)
        if value is not None:
            self._items.move_to_end(key)
        return value

    def put(self, key: str, value: Any) -> None:
        if self.size == 0:
            return
        self._items[key] = value
        self._items.move_to_end(key)
        while len(self._items) > self.size:
            self._items.popitem(last=False)

    def __len__(self) -> int:
        return len(self._items)
