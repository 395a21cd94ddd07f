"""Resent history in the distributed layout: what a sessionizer member holds, resent vs deltas.

The conversations of benchmarks/resent.py (same texts and calls, about 500 characters a
message, request k carrying call k of every conversation) go through a routing collector
(decode, parse, seal: `routing.mode: route`, without the Kafka client) and then a sessionizer
member (open, validate, sessionize, sample, assemble), in this process, twice: history resent
on every call, and as deltas. Printed per dialect and length: CPU microseconds per span of each
role (`time.process_time`) and the bytes the member holds per open conversation (its
sessionizer's accounting, just before the sessions close). Resent and delta runs alternate
(which goes first swaps every round), keys are new in every run; each figure is the median
over rounds, and the ratios are resent / deltas.

    python benchmarks/routed_resent.py [--rounds 2] [--turns 40 200] [--dialects genai ...]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

# Appended, not prepended: the installed `turnwatch` (which maps collector/ into it) must win
# over the repository's own `turnwatch/` folder.
sys.path.append(str(Path(__file__).resolve().parent.parent))

from benchmarks.resent import requests
from benchmarks.routing import route, sessionize


def run(bodies: list[bytes], turns: int, spans_wanted: int) -> tuple[float, float, float]:
    """(collector us/span, member us/span, bytes held per conversation on the member)."""
    calls = turns // 2
    spans = calls * max(1, spans_wanted // calls)
    routing_seconds, records = route(bodies)
    member_seconds, sessions, held = sessionize(records)
    if sessions != spans // calls:
        raise RuntimeError(f"{sessions} sessions from {spans // calls} conversations")
    return 1e6 * routing_seconds / spans, 1e6 * member_seconds / spans, held / sessions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--spans", type=int, default=1_600, help="spans a run")
    parser.add_argument("--turns", type=int, nargs="+", default=[40, 200])
    parser.add_argument("--dialects", nargs="+", default=["genai", "openinference", "openllmetry"])
    args = parser.parse_args()
    print(f"distributed layout, resent vs deltas: {args.spans} spans a run, {args.rounds} rounds")
    print(
        f"{'dialect':<15}{'turns':>6}{'collector us/span':>19}{'deltas':>8}"
        f"{'member us/span':>16}{'deltas':>8}{'member KiB/conv':>17}{'deltas':>8}{'ratio':>7}"
    )
    for dialect in args.dialects:
        for turns in args.turns:
            results: dict[bool, list[tuple[float, float, float]]] = {True: [], False: []}
            for round_number in range(args.rounds):
                order = (True, False) if round_number % 2 == 0 else (False, True)
                for resent in order:
                    prefix = f"routed-{dialect}-{turns}-{round_number}-{'r' if resent else 'd'}"
                    bodies = requests(dialect, prefix, turns, resent, args.spans)
                    results[resent].append(run(bodies, turns, args.spans))
            resent, deltas = (
                [statistics.median(row[column] for row in results[which]) for column in range(3)]
                for which in (True, False)
            )
            print(
                f"{dialect:<15}{turns:>6}{resent[0]:>19.1f}{deltas[0]:>8.1f}"
                f"{resent[1]:>16.1f}{deltas[1]:>8.1f}{resent[2] / 1024:>17.1f}"
                f"{deltas[2] / 1024:>8.1f}{resent[2] / deltas[2]:>7.2f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
