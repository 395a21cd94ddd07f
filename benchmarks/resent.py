"""Resent history against deltas: collector CPU per span at 4, 40 and 400 turns, per dialect.

Stateless chat APIs resend the whole history with every call, so a call's input grows with the
conversation. For each dialect that resends (GenAI with a JSON string, OpenInference, OpenLLMetry)
and each length, the same conversations (same texts, same calls, about 500 characters a message)
go through turnwatch's collector in this process twice: history resent on every call, and as
deltas (each call sends only the new user message). What is timed, in CPU time
(`time.process_time`), is everything from the OTLP/protobuf bytes to the validated Session:
the receiver's protobuf decoding, dialect decoding, sessionizing, sampling, assembly and
validation. The garbage collector is set up as `turnwatch serve` sets it (start-up objects
frozen, its thresholds) before anything is timed, the same for both sides. Request k carries
call k of every conversation of the run (about `--spans` spans a run whatever the length: 3,200
by default). The two sides run side by side, each through its own collector, in blocks of
`--block` requests (20): a block of resent requests, then a block of delta requests (the side
that goes first swaps every block), each request's CPU time added to its side, so a stretch of
the shared machine's noise lands on both sides alike instead of on whichever run it fell in.
Blocks, not single requests: after each resent request (about a megabyte at 400 turns) a delta
request would start with cold caches, which took about a fifth off the ratio. Keys are new in
every round, and each row gives the median over rounds and the ratio resent / deltas per round;
bytes are what the sessionizer holds per conversation, kept for the reopen window.

    python benchmarks/resent.py [--rounds 3] [--spans 3200] [--block 20] [--turns 4 40 400]
        [--dialects ...]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from prometheus_client import CollectorRegistry
from turnwatch.collector.metrics import CollectorMetrics
from turnwatch.collector.otlp_common import DecodeLimits
from turnwatch.collector.otlp_proto import decode_traces

from tests.conversations import conversation_spans, protobuf_request
from tests.stages import assembling_pipeline
from turnwatch import collector
from turnwatch.app.serve import GC_THRESHOLDS, tune_garbage_collector
from turnwatch.app.settings import load_settings


def requests(dialect: str, prefix: str, turns: int, resent: bool, spans: int) -> list[bytes]:
    calls = turns // 2
    conversations = [
        conversation_spans(dialect, f"{prefix}-{number}", calls, resent)
        for number in range(max(1, spans // calls))
    ]
    for spans in conversations:
        spans[-1].attributes["turnwatch.session.end"] = "true"
    return [protobuf_request([spans[call] for spans in conversations]) for call in range(calls)]


class Side:
    """One side of a round (resent or deltas): its own collector, its CPU time."""

    def __init__(self, bodies: list[bytes], turns: int) -> None:
        settings = load_settings(None, {})
        metrics = CollectorMetrics(CollectorRegistry())
        self.pipeline, self.built = assembling_pipeline(settings.collector, metrics)
        self.limits = DecodeLimits(max_attribute_bytes=settings.otlp.max_attribute_bytes)
        self.bodies = bodies
        self.turns = turns
        self.spans = 0
        self.cpu = 0.0

    def send(self, request: int) -> None:
        started = time.process_time()
        decoded = decode_traces(self.bodies[request], self.limits)
        self.pipeline.accept_spans(decoded.items)
        self.cpu += time.process_time() - started
        self.spans += len(decoded.items)

    def result(self) -> tuple[float, float]:
        """(CPU microseconds per span, bytes kept per conversation)."""
        sessions = self.built.take()
        whole = sum(len(s.turns) == self.turns and not s.truncated for s in sessions)
        if whole != len(sessions) or not sessions:
            raise RuntimeError(f"{whole} of {len(sessions)} sessions came out whole")
        return 1e6 * self.cpu / self.spans, self.pipeline.sessionizer.kept_bytes / len(sessions)


def side_by_side(resent: Side, deltas: Side, block: int) -> None:
    gc.collect()
    for number, first in enumerate(range(0, len(resent.bodies), block)):
        for side in (resent, deltas) if number % 2 == 0 else (deltas, resent):
            for request in range(first, min(first + block, len(side.bodies))):
                side.send(request)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--spans", type=int, default=3_200, help="spans a run")
    parser.add_argument("--turns", type=int, nargs="+", default=[4, 40, 400])
    parser.add_argument("--block", type=int, default=20, help="requests a side sends in turn")
    parser.add_argument("--dialects", nargs="+", default=["genai", "openinference", "openllmetry"])
    args = parser.parse_args()
    tune_garbage_collector()  # as `turnwatch serve` runs the collector, for both sides
    per_round = max(24, 5 * args.rounds + 2)  # the column's width: "1.85 " a round
    print(
        f"resent vs deltas: {args.spans} spans a run, {args.rounds} rounds, blocks of "
        f"{args.block} requests, {collector.BUILD}, "
        f"gc thresholds {GC_THRESHOLDS} after gc.freeze() (as turnwatch serve)"
    )
    print(
        f"{'dialect':<15}{'turns':>6}{'resent us/span':>16}{'deltas us/span':>16}{'ratio':>7}"
        f"{'ratios per round':>{per_round}}{'KiB/conv resent':>17}{'deltas':>8}"
    )
    for dialect in args.dialects:
        for turns in args.turns:
            results: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
            ratios = []
            for round_number in range(args.rounds):
                prefix = f"{dialect}-{turns}-{round_number}"
                resent = Side(requests(dialect, f"{prefix}-r", turns, True, args.spans), turns)
                deltas = Side(requests(dialect, f"{prefix}-d", turns, False, args.spans), turns)
                side_by_side(resent, deltas, args.block)
                results[True].append(resent.result())
                results[False].append(deltas.result())
                ratios.append(results[True][-1][0] / results[False][-1][0])
            resent_us = statistics.median(r[0] for r in results[True])
            delta_us = statistics.median(r[0] for r in results[False])
            print(
                f"{dialect:<15}{turns:>6}{resent_us:>16.1f}{delta_us:>16.1f}"
                f"{statistics.median(ratios):>7.2f}"
                f"{' '.join(f'{ratio:.2f}' for ratio in ratios):>{per_round}}"
                f"{statistics.median(r[1] for r in results[True]) / 1024:>17.1f}"
                f"{statistics.median(r[1] for r in results[False]) / 1024:>8.1f}",
                flush=True,
            )
    print("goal: ratio <= 2 at 400 turns")


if __name__ == "__main__":
    main()
