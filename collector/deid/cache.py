"""A bounded LRU of analysis results, keyed by an HMAC of the text.

System prompts, canned replies and the history a new revision re-emits repeat constantly; their
findings are reused instead of re-running the NLP pipeline. Keys are keyed MACs, so the cache
holds no message text and a heap dump does not reveal which texts were seen.
"""

from __future__ import annotations

import hashlib
import hmac
from collections import OrderedDict
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Finding:
    start: int
    end: int
    entity: str
    score: float


Findings = tuple[Finding, ...]


class AnalysisCache:
    def __init__(self, secret: bytes, size: int) -> None:
        self._key = hashlib.sha256(b"turnwatch.deid.cache\x00" + secret).digest()
        self._size = size
        self._entries: OrderedDict[bytes, Findings] = OrderedDict()

    def key(self, text: str) -> bytes:
        return hmac.new(self._key, text.encode("utf-8", "surrogatepass"), hashlib.sha256).digest()

    def get(self, key: bytes) -> Findings | None:
        found = self._entries.get(key)
        if found is not None:
            self._entries.move_to_end(key)
        return found

    def put(self, key: bytes, findings: Findings) -> None:
        if self._size == 0:
            return
        self._entries[key] = findings
        self._entries.move_to_end(key)
        while len(self._entries) > self._size:
            self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)
