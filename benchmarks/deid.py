"""De-identification quality and speed: turnwatch's stage next to Presidio's default analyzer,
on the labelled PII corpus (`benchmarks/pii/`), and the leak count on everything a real
`turnwatch serve` emits (`benchmarks/deid_leaks.py`).

    python benchmarks/deid.py [--seed 1] [--texts 600] [--conversations 60] [--no-server]

Both sides see the same distinct texts (no text repeats, so no cache helps):
- Presidio: `AnalyzerEngine` with its predefined recognizers and the same installed spaCy model
  (full pipeline, default threshold) and `AnonymizerEngine`, one call per text, as a user would
  write it; its e-mail recognizer gets the offline suffix list so nothing is downloaded.
- turnwatch: `Deidentifier.deidentify`, a short text as a one-turn session, a conversation as
  its session (text, tool arguments and results), default configuration, cold cache.

Work runs in chunks, the two sides alternating which goes first; times are CPU seconds of this
process (`time.process_time`). Model loading is excluded. Figure definitions:
`benchmarks/pii/score.py`.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from presidio_analyzer import AnalyzerEngine, RecognizerRegistry
from presidio_analyzer.nlp_engine import SpacyNlpEngine
from presidio_analyzer.predefined_recognizers import EmailRecognizer
from presidio_anonymizer import AnonymizerEngine
from turnwatch.collector.deid.analysis import AnalysisStats
from turnwatch.collector.deid.cache import Finding
from turnwatch.collector.deid.config import DeidConfig
from turnwatch.collector.deid.deidentifier import Deidentifier
from turnwatch.collector.deid.offline import OfflineEmailRecognizer
from turnwatch.collector.deid.replace import merge
from turnwatch.collector.deid.stage import build_deidentifier

from benchmarks.pii.generate import make_corpus
from benchmarks.pii.model import LabelledConversation, LabelledText
from benchmarks.pii.score import Figures, ratio
from benchmarks.pii.sessions import conversation_session, session
from turnwatch.schema import Role, Session, Turn

SECRET = b"benchmark-secret-0123456789"
CHUNK = 20
Pair = tuple[LabelledText, str]


def pairs(conversation: LabelledConversation, out: Session) -> Iterator[tuple[LabelledText, Any]]:
    """(labelled text, what became of it in `out`) for every text of the conversation."""
    for turn, done in zip(conversation.turns, out.turns, strict=True):
        if turn.text is not None:
            yield turn.text, done.text
        for call, done_call in zip(turn.calls, done.tool_calls, strict=True):
            yield from _json_pairs(call.arguments, done_call.arguments)
            yield from _json_pairs(call.result, done_call.result)


def _json_pairs(labelled: Any, done: Any) -> Iterator[tuple[LabelledText, Any]]:
    if isinstance(labelled, LabelledText):
        yield labelled, done
    elif isinstance(labelled, dict):
        for key, item in labelled.items():
            yield from _json_pairs(item, done[key])
    elif isinstance(labelled, list):
        for item, done_item in zip(labelled, done, strict=True):
            yield from _json_pairs(item, done_item)


class Presidio:
    def __init__(self, model: str) -> None:
        nlp_engine = SpacyNlpEngine(models=[{"lang_code": "en", "model_name": model}])
        nlp_engine.load()
        registry = RecognizerRegistry()
        registry.load_predefined_recognizers(nlp_engine=nlp_engine, languages=["en"])
        registry.remove_recognizer(EmailRecognizer.__name__)
        registry.add_recognizer(OfflineEmailRecognizer())
        self.analyzer = AnalyzerEngine(nlp_engine=nlp_engine, registry=registry)
        self.anonymizer = AnonymizerEngine()

    def run(self, text: str) -> tuple[list[tuple[int, int]], str]:
        results = self.analyzer.analyze(text=text, language="en")
        output = self.anonymizer.anonymize(text=text, analyzer_results=results).text
        found = tuple(Finding(r.start, r.end, r.entity_type, r.score) for r in results)
        return [(f.start, f.end) for f in merge(found)], output


class Turnwatch:
    def __init__(self) -> None:
        self.deidentifier: Deidentifier = build_deidentifier(DeidConfig(), SECRET)

    def run(self, item: Session) -> tuple[Session, Any]:
        out = self.deidentifier.deidentify(item).session
        found = self.deidentifier.find(item, float("inf"), AnalysisStats())
        return out, found

    def tokens(self, found: Any, labelled: LabelledText) -> dict[str, list[str | None]]:
        regions = found.regions.get(labelled.text, [])
        out: dict[str, list[str | None]] = {}
        for item in labelled.occurrences:
            covering = next(
                (r for r in regions if r.start <= item.start and item.end <= r.end), None
            )
            token = None
            if covering is not None:
                key = found.keys[(labelled.text, covering.start, covering.end)]
                token = self.deidentifier.pseudonymizer.token_for(found.labels[key], key)
            out.setdefault(item.group, []).append(token)
        return out


def alternate(items: list, first: Callable, second: Callable) -> tuple[float, float]:
    """Run both over `items` in chunks, alternating which goes first; CPU seconds of each."""
    spent = [0.0, 0.0]
    for number in range(0, len(items), CHUNK):
        chunk = items[number : number + CHUNK]
        order = (
            [(0, first), (1, second)] if (number // CHUNK) % 2 == 0 else [(1, second), (0, first)]
        )
        for side, run in order:
            started = time.process_time()
            run(chunk)
            spent[side] += time.process_time() - started
    return spent[0], spent[1]


def measure(corpus, presidio: Presidio, turnwatch: Turnwatch) -> dict[str, Any]:
    figures = {
        name: {"short": Figures(), "conversations": Figures()} for name in ("presidio", "turnwatch")
    }
    results: dict[str, dict[int, Any]] = {"presidio": {}, "turnwatch": {}}

    def presidio_texts(chunk):
        for labelled in chunk:
            results["presidio"][id(labelled)] = presidio.run(labelled.text)

    def turnwatch_texts(chunk):
        for labelled in chunk:
            item = session("bench", [Turn(index=0, role=Role.USER, text=labelled.text)])
            results["turnwatch"][id(labelled)] = turnwatch.deidentifier.deidentify(item).session

    short_time = alternate(corpus.texts, presidio_texts, turnwatch_texts)
    for labelled in corpus.texts:
        regions, output = results["presidio"][id(labelled)]
        figures["presidio"]["short"].add(labelled, regions, output)
        item = session("bench", [Turn(index=0, role=Role.USER, text=labelled.text)])
        found = turnwatch.deidentifier.find(item, float("inf"), AnalysisStats())
        spans = [(r.start, r.end) for r in found.regions.get(labelled.text, [])]
        figures["turnwatch"]["short"].add(
            labelled, spans, results["turnwatch"][id(labelled)].turns[0].text
        )

    sessions = {c.conversation_id: conversation_session(c) for c in corpus.conversations}

    def presidio_talks(chunk):
        for conversation in chunk:
            results["presidio"][conversation.conversation_id] = [
                presidio.run(t.text) for t in conversation.texts()
            ]

    def turnwatch_talks(chunk):
        for conversation in chunk:
            results["turnwatch"][conversation.conversation_id] = turnwatch.deidentifier.deidentify(
                sessions[conversation.conversation_id]
            ).session

    talk_time = alternate(corpus.conversations, presidio_talks, turnwatch_talks)
    for conversation in corpus.conversations:
        for labelled, (regions, output) in zip(
            conversation.texts(), results["presidio"][conversation.conversation_id], strict=True
        ):
            figures["presidio"]["conversations"].add(labelled, regions, output)
        out = results["turnwatch"][conversation.conversation_id]
        found = turnwatch.deidentifier.find(
            sessions[conversation.conversation_id], float("inf"), AnalysisStats()
        )
        groups: dict[str, list[str | None]] = {}
        for labelled, output in pairs(conversation, out):
            spans = [(r.start, r.end) for r in found.regions.get(labelled.text, [])]
            figures["turnwatch"]["conversations"].add(labelled, spans, output)
            for group, tokens in turnwatch.tokens(found, labelled).items():
                groups.setdefault(group, []).extend(tokens)
        figures["turnwatch"]["conversations"].add_groups(groups)
    return {"figures": figures, "short_time": short_time, "talk_time": talk_time}


def print_report(corpus, measured: dict[str, Any]) -> None:
    figures = measured["figures"]
    texts = len(corpus.texts)
    talk_texts = sum(len(c.texts()) for c in corpus.conversations)
    print(
        f"corpus: {texts} short texts, {len(corpus.conversations)} conversations "
        f"({talk_texts} texts)\n"
    )
    print(
        "| part | pipeline | token recall | token precision | F2 | region precision | value recall "
        "| location recall | fully masked | one token per value | CPU s | texts/CPU-s |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for part, (count, times) in {
        "short": (texts, measured["short_time"]),
        "conversations": (talk_texts, measured["talk_time"]),
    }.items():
        for side, name in enumerate(("presidio", "turnwatch")):
            f = figures[name][part]
            total = f.totals()
            groups = f"{ratio(f.whole_groups, f.groups):.3f} ({f.groups})" if f.groups else "n/a"
            print(
                f"| {part} | {name} | {f.token_recall:.3f} | {f.token_precision:.3f} | "
                f"{f.f2:.3f} | "
                f"{f.region_precision:.3f} | {ratio(total.removed, total.occurrences):.3f} | "
                f"{ratio(total.located, total.occurrences):.3f} | "
                f"{ratio(total.masked, total.occurrences):.3f} | "
                f"{groups} | {times[side]:.1f} | {count / times[side]:.1f} |"
            )
    print(
        "\nper type (turnwatch, short texts and conversations together; Presidio's value recall "
        "beside it)"
    )
    print(
        "| type | value recall | location recall | fully masked | occurrences "
        "| presidio value recall |"
    )
    print("|---|---|---|---|---|---|")
    types = sorted(
        {t for name in figures for part in figures[name] for t in figures[name][part].by_type}
    )
    for entity in types:
        ours = [
            figures["turnwatch"][part].by_type.get(entity) for part in ("short", "conversations")
        ]
        theirs = [
            figures["presidio"][part].by_type.get(entity) for part in ("short", "conversations")
        ]
        n = sum(x.occurrences for x in ours if x)
        print(
            f"| {entity} | {ratio(sum(x.removed for x in ours if x), n):.3f} | "
            f"{ratio(sum(x.located for x in ours if x), n):.3f} | "
            f"{ratio(sum(x.masked for x in ours if x), n):.3f} | {n} | "
            f"{ratio(sum(x.removed for x in theirs if x), n):.3f} |"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--texts", type=int, default=600)
    parser.add_argument("--conversations", type=int, default=60)
    parser.add_argument(
        "--no-server", action="store_true", help="skip the leak run on a real server"
    )
    args = parser.parse_args(argv)
    corpus = make_corpus(args.seed, args.texts, args.conversations)
    presidio, turnwatch = Presidio(DeidConfig().model), Turnwatch()
    print_report(corpus, measure(corpus, presidio, turnwatch))
    if not args.no_server:
        from benchmarks.deid_leaks import leak_report

        print()
        print(leak_report(corpus.conversations, SECRET.decode()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
