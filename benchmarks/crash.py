"""Crash: SIGKILL at random moments of a burst of conversations, then a restart; what was lost.

`turnwatch serve` (all roles, embedded bus with its spool, write-ahead log on, de-identification
as shipped, a scorer that echoes each session as a score record) takes a burst of conversations
from a client that counts, on its side, which conversations were acknowledged (every request
answered 200: whole; the first only: partial). After a random number of acknowledged requests
plus a random fraction of one, the process is killed with SIGKILL, started again on the same data
directory, and once everything is scored and quiet the score records are counted per session
(tests/crash.py; tests/test_reliability_crash.py asserts the same runs). The baseline, in the same
run: each kill point is also run with the log off (spool still on), in alternating order.

Columns: the request the kill came after, conversations wholly and partly acknowledged, request
frames replayed from the log at the restart, rebuilt sessions skipped because they were already
on the bus, acknowledged conversations lost, conversations with a revision delivered again to
the exporter (`again`: the bus is at-least-once across a kill), revisions the restart counted
twice, conversations scored as two revisions (cut in two by the crash), and the time from the
restart until all was scored and quiet (start-up and Presidio's load included).

    python benchmarks/crash.py [--runs 10] [--conversations 200] [--seed N]
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.crash import crash_run, random_kill_point  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--conversations", type=int, default=200)
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    rng = random.Random(seed)
    print(
        f"crash: {args.runs} runs, {args.conversations} conversations a burst (2 requests each, "
        f"2 conversations opening and 2 closing per request), seed {seed}"
    )
    print(
        f"{'run':>4} {'log':<4}{'killed after':>14}{'whole':>7}{'partial':>9}{'replayed':>10}"
        f"{'skipped':>9}{'lost':>6}{'again':>7}{'twice':>7}{'split':>7}{'recovered s':>13}"
    )
    totals = {
        log: {"acknowledged": 0, "lost": 0, "again": 0, "twice": 0, "split": 0}
        for log in ("on", "off")
    }
    with tempfile.TemporaryDirectory(prefix="turnwatch-crash-") as scratch:
        for number in range(args.runs):
            kill = random_kill_point(rng, args.conversations)
            order = (True, False) if number % 2 == 0 else (False, True)
            for wal in order:
                log = "on" if wal else "off"
                directory = Path(scratch) / f"crash-{number}-{log}"
                run = crash_run(directory, args.conversations, kill, wal=wal)
                total = totals[log]
                total["acknowledged"] += len(run.whole | run.partial)
                total["lost"] += len(run.lost)
                total["again"] += len(run.redelivered)
                total["twice"] += run.counted_twice
                total["split"] += len(run.split)
                print(
                    f"{number + 1:>4} {log:<4}{f'{run.kill_after} / {run.requests}':>14}"
                    f"{len(run.whole):>7}{len(run.partial):>9}{run.replayed_frames:>10.0f}"
                    f"{run.replay_skipped:>9.0f}{len(run.lost):>6}"
                    f"{len(run.redelivered):>7}{run.counted_twice:>7.0f}{len(run.split):>7}"
                    f"{run.recovery_seconds:>13.1f}"
                )
    for log, total in totals.items():
        print(
            f"log {log}: {total['acknowledged']} acknowledged conversations, {total['lost']} "
            f"lost, {total['again']} delivered again, {total['twice']:.0f} counted twice, "
            f"{total['split']} split in two revisions"
        )


if __name__ == "__main__":
    main()
