"""De-identification benchmark: Presidio one message at a time vs turnwatch's stage.

Both sides see the same stream of realistic sessions from the labelled PII corpus
(`tests/pii_corpus.py`): every session carries the same system prompt, assistants use canned
replies, and each conversation is emitted twice (a partial revision, then the whole conversation
repeating the earlier turns), as the sessionizer does when late spans arrive.

- baseline: Presidio's default `AnalyzerEngine` (all predefined recognizers, the same installed
  spaCy model, default threshold) and `AnonymizerEngine`, called once per text of every message,
  as a user would write it. Its e-mail recognizer gets the offline suffix list too, so that no
  download is attempted; nothing else changes.
- turnwatch: `Deidentifier.deidentify` per session (batched spaCy pass, HMAC-keyed result cache,
  session-wide propagation, keyed pseudonyms), from a cold cache.

A message is the system prompt or one turn (its text and its tool calls' argument and result
strings). Recall: labelled values (a text, a value in it) absent from the output. Precision:
merged detected regions that overlap a labelled value. Model loading is excluded from timings.

    python benchmarks/deid.py [--conversations 40] [--exchanges 6]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from presidio_analyzer import AnalyzerEngine, RecognizerRegistry
from presidio_analyzer.nlp_engine import SpacyNlpEngine
from presidio_analyzer.predefined_recognizers import EmailRecognizer
from presidio_anonymizer import AnonymizerEngine
from turnwatch.collector.deid.analysis import AnalysisStats
from turnwatch.collector.deid.cache import Finding
from turnwatch.collector.deid.config import DeidConfig
from turnwatch.collector.deid.offline import OfflineEmailRecognizer
from turnwatch.collector.deid.replace import merge
from turnwatch.collector.deid.stage import build_deidentifier

from tests.pii_corpus import LabelledSession, build_sessions, message_units

SECRET = b"benchmark-secret-0123456789"


@dataclass
class Quality:
    labelled: int = 0
    removed: int = 0
    regions: int = 0
    true_regions: int = 0

    def score(self, text: str, output: str, findings: tuple[Finding, ...], values: list[str]):
        occurrences = [
            (start, start + len(value)) for value in values for start in _all(text, value)
        ]
        for value in values:
            if value in text:
                self.labelled += 1
                self.removed += value not in output
        for region in merge(text, findings):
            self.regions += 1
            self.true_regions += any(
                region.start < end and start < region.end for start, end in occurrences
            )

    @property
    def recall(self) -> float:
        return self.removed / self.labelled if self.labelled else 1.0

    @property
    def precision(self) -> float:
        return self.true_regions / self.regions if self.regions else 1.0


def _all(text: str, value: str):
    start = text.find(value)
    while start >= 0:
        yield start
        start = text.find(value, start + 1)


def baseline(sessions: list[LabelledSession], model: str) -> tuple[float, Quality]:
    nlp_engine = SpacyNlpEngine(models=[{"lang_code": "en", "model_name": model}])
    nlp_engine.load()
    registry = RecognizerRegistry()
    registry.load_predefined_recognizers(nlp_engine=nlp_engine, languages=["en"])
    registry.remove_recognizer(EmailRecognizer.__name__)
    registry.add_recognizer(OfflineEmailRecognizer())
    analyzer = AnalyzerEngine(nlp_engine=nlp_engine, registry=registry)
    anonymizer = AnonymizerEngine()

    seen: dict[str, tuple[str, tuple[Finding, ...]]] = {}
    started = time.perf_counter()
    for labelled in sessions:
        for message in message_units(labelled.session):
            for text in message:
                results = analyzer.analyze(text=text, language="en")
                output = anonymizer.anonymize(text=text, analyzer_results=results).text
                found = tuple(Finding(r.start, r.end, r.entity_type, r.score) for r in results)
                seen[text] = (output, found)
    elapsed = time.perf_counter() - started

    quality = Quality()
    values = _values_by_text(sessions)
    for text, (output, found) in seen.items():
        quality.score(text, output, found, values.get(text, []))
    return elapsed, quality


def turnwatch(sessions: list[LabelledSession]) -> tuple[float, Quality, AnalysisStats]:
    deidentifier = build_deidentifier(DeidConfig(), SECRET)
    outputs = []
    stats = AnalysisStats()
    started = time.perf_counter()
    for labelled in sessions:
        result = deidentifier.deidentify(labelled.session)
        stats.cache_hits += result.stats.cache_hits
        stats.analysed += result.stats.analysed
        outputs.append(result.session)
    elapsed = time.perf_counter() - started

    quality = Quality()
    values = _values_by_text(sessions)
    scored: set[str] = set()
    for labelled, out in zip(sessions, outputs, strict=True):
        findings = deidentifier.find(labelled.session, float("inf"), AnalysisStats())
        pairs = zip(message_units(labelled.session), message_units(out), strict=True)
        for message, output_message in pairs:
            for text, output in zip(message, output_message, strict=True):
                if text not in scored:
                    scored.add(text)
                    quality.score(text, output, findings[text], values.get(text, []))
    return elapsed, quality, stats


def _values_by_text(sessions: list[LabelledSession]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for labelled in sessions:
        values = {pii.value for pii in labelled.pii}
        for message in message_units(labelled.session):
            for text in message:
                out[text] = sorted(value for value in values if value in text)
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=40)
    parser.add_argument("--exchanges", type=int, default=6)
    args = parser.parse_args(argv)

    sessions = build_sessions(args.conversations, args.exchanges)
    messages = sum(len(message_units(labelled.session)) for labelled in sessions)
    texts = sum(len(m) for s in sessions for m in message_units(s.session))
    distinct = len({t for s in sessions for m in message_units(s.session) for t in m})
    print(
        f"corpus: {len(sessions)} sessions, {messages} messages, {texts} texts "
        f"({distinct} distinct)"
    )

    runs: list[tuple[str, Callable[[], tuple]]] = [
        ("presidio baseline", lambda: baseline(sessions, DeidConfig().model)),
        ("turnwatch stage", lambda: turnwatch(sessions)),
    ]
    rows = []
    for name, run in runs:
        elapsed, quality, *rest = run()
        rows.append((name, elapsed, quality))
        if rest:
            stats = rest[0]
            print(f"turnwatch cache: {stats.cache_hits} hits, {stats.analysed} texts analysed")

    print()
    print(f"{'pipeline':<20}{'messages/s':>12}{'ms/message':>12}{'recall':>9}{'precision':>11}")
    for name, elapsed, quality in rows:
        print(
            f"{name:<20}{messages / elapsed:>12.1f}{elapsed * 1000 / messages:>12.2f}"
            f"{quality.recall:>9.3f}{quality.precision:>11.3f}"
        )
    base, ours = rows[0][1], rows[1][1]
    print(f"\nspeed-up: {base / ours:.1f}x (goal >= 3x, recall no lower than the baseline)")


if __name__ == "__main__":
    main()
