"""Find PII spans in many texts at once: cache first, then one batched spaCy pass.

spaCy runs inside `nlp.memory_zone()`, so the strings and lexemes that a batch adds to the
vocabulary are freed when the batch is done (Presidio issue 198: a long-running analyzer otherwise
grows by gigabytes). Nothing from a Doc outlives the zone: findings are plain offsets.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass

from presidio_analyzer import AnalyzerEngine, RecognizerResult
from turnwatch.collector.deid.cache import AnalysisCache, Finding, Findings
from turnwatch.collector.deid.config import DeidConfig
from turnwatch.collector.deid.recognizers.base import LANGUAGE

POSSESSIVES = ("'s", "’s")


class TimeLimitExceeded(Exception):
    pass


@dataclass
class AnalysisStats:
    cache_hits: int = 0
    analysed: int = 0


class TextAnalyzer:
    def __init__(self, engine: AnalyzerEngine, config: DeidConfig, cache: AnalysisCache) -> None:
        self.engine = engine
        self.cache = cache
        self._entities = config.all_entities()
        self._threshold = config.score_threshold
        self._allow_list = config.allow_list or None
        self._batch_size = config.batch_size

    def analyze(
        self, texts: Iterable[str], deadline: float, stats: AnalysisStats
    ) -> dict[str, Findings]:
        """Findings for every distinct text; raise TimeLimitExceeded past `deadline`."""
        results: dict[str, Findings] = {}
        pending: dict[str, bytes] = {}
        for text in texts:
            if text in results or text in pending:
                continue
            if not text.strip():
                results[text] = ()
                continue
            key = self.cache.key(text)
            cached = self.cache.get(key)
            if cached is None:
                pending[text] = key
            else:
                stats.cache_hits += 1
                results[text] = cached
        if pending:
            self._analyse_batch(pending, deadline, results, stats)
        return results

    def _analyse_batch(
        self,
        pending: dict[str, bytes],
        deadline: float,
        results: dict[str, Findings],
        stats: AnalysisStats,
    ) -> None:
        nlp_engine = self.engine.nlp_engine
        with nlp_engine.get_nlp(LANGUAGE).memory_zone():
            batch = nlp_engine.process_batch(list(pending), LANGUAGE, batch_size=self._batch_size)
            for text, artifacts in batch:
                # Checked between texts: a thread cannot be interrupted inside spaCy.
                if time.monotonic() > deadline:
                    raise TimeLimitExceeded
                found = self.engine.analyze(
                    text,
                    LANGUAGE,
                    entities=self._entities,
                    nlp_artifacts=artifacts,
                    score_threshold=self._threshold,
                    allow_list=self._allow_list,
                )
                findings = tuple(
                    Finding(item.start, _value_end(text, item), item.entity_type, item.score)
                    for item in found
                )
                self.cache.put(pending[text], findings)
                results[text] = findings
                stats.analysed += 1


def _value_end(text: str, item: RecognizerResult) -> int:
    """The end of the value itself: the model tags "Ethan Carter's" as the name, and the same
    person must get the same pseudonym in "Ethan Carter's account" as in their record."""
    if item.end - item.start > len(POSSESSIVES[0]) and text.endswith(
        POSSESSIVES, item.start, item.end
    ):
        return item.end - len(POSSESSIVES[0])
    return item.end
