"""A bounded LRU of analysis results, keyed by an HMAC of the text.

System prompts, canned replies and the history a new revision re-emits repeat constantly; their
findings are reused instead of re-running the NLP pipeline. Keys are keyed MACs, so the cache
holds no message text and a heap dump does not reveal which texts were seen.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass

from turnwatch.collector.deid.secret import derived_key

from turnwatch.lru import LRU


@dataclass(frozen=True, slots=True)
class Finding:
    start: int
    end: int
    entity: str
    score: float
    key: str | None = None
    """The canonical value the token is keyed by, when it is not the span's own (a name part
    carries its person's)."""


Findings = tuple[Finding, ...]


class AnalysisCache(LRU[bytes, Findings]):
    __slots__ = ("_key",)

    def __init__(self, secret: bytes, size: int) -> None:
        super().__init__(size)
        self._key = derived_key(secret, "cache")

    def key(self, text: str) -> bytes:
        return hmac.new(self._key, text.encode("utf-8", "surrogatepass"), hashlib.sha256).digest()
