"""Verdict cache: the same prompt version, model and input get the same verdict without a call.

Keys hash the whole request, so a session revision that appends turns re-judges only the batches
whose input changed (metrics align their batches to fixed positions for this reason). Bounded LRU;
size 0 turns caching off.
"""

from __future__ import annotations

import hashlib
from typing import Any

import orjson

from turnwatch.lru import LRU


def cache_key(prompt_version: str, model: str, payload: Any) -> str:
    blob = orjson.dumps([prompt_version, model, payload], option=orjson.OPT_SORT_KEYS)
    return hashlib.sha256(blob).hexdigest()


class VerdictCache(LRU[str, Any]):
    """Verdicts by `cache_key`; the capacity is `judge.cache_size`."""

    __slots__ = ()
