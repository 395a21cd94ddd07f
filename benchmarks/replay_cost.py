"""Time and judge calls per replayed case.

Replays the support-bot regression cases (address change, refund, order status with a failing
tool; `tests/support_bot.py`) against its v1 on loopback, through each simulated user and each
judge: the built-in heuristic judge (no calls) and an OpenAI-compatible judge on loopback
(`tests/test_judge_loopback.py`, every metric, sample rate 1). Modes run in alternating order,
round after round, each round on new cases (no two replays share tokens). Wall and CPU time are
per replayed case, scoring included; CPU time is this process's, which also serves the chatbot
and the loopback judge, so it is an upper bound on replay's own. The baseline is the recorded
user with the heuristic judge, measured in the same rounds. Run: `python benchmarks/replay_cost.py`.
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from turnwatch.exporters.regressions.chat import ChatClient
from turnwatch.exporters.regressions.replay import (
    Scoring,
    recorded_user,
    replay_all,
    scripted_user,
)
from turnwatch.exporters.regressions.scenario import Scenario

from tests.support_bot import cases, serve
from tests.test_judge_loopback import running
from tests.test_scorers_builders import support_scorer

USERS = {"recorded": recorded_user, "scripted": scripted_user}


def measure(url: str, user: str, judge: str | None, scenarios: list[Scenario]):
    config = {"judge": {"endpoint": {"base_url": judge, "api_key_env": None}}} if judge else {}
    client, scoring = ChatClient(url), Scoring(support_scorer(**config))
    wall, cpu = time.perf_counter(), time.process_time()
    try:
        runs = replay_all(scenarios, client, scoring, USERS[user])
    finally:
        client.close()
        scoring.close()
    count = len(runs)
    return (
        (time.perf_counter() - wall) / count,
        (time.process_time() - cpu) / count,
        sum(run.judge_calls for run in runs) / count,
        sum(run.passed for run in runs),
        count,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--per-kind", type=int, default=5, help="cases of each kind per round")
    args = parser.parse_args()
    modes = [(user, judge) for judge in ("heuristic", "loopback") for user in USERS]
    results: dict[tuple[str, str], list[tuple[float, float, float, int, int]]] = {}
    numbers = itertools.count(1, 3 * args.per_kind)
    with serve("v1") as bot, running() as judge_server:
        for round_number in range(args.rounds):
            order = modes if round_number % 2 == 0 else list(reversed(modes))
            for user, judge in order:
                replayed = cases(args.per_kind, args.per_kind, args.per_kind, start=next(numbers))
                scenarios = [Scenario.of_case(case) for case in replayed]
                before = len(bot.requests)
                endpoint = judge_server.base_url if judge == "loopback" else None
                measured = measure(bot.url, user, endpoint, scenarios)
                requests = (len(bot.requests) - before) / measured[4]
                results.setdefault((user, judge), []).append((*measured[:4], requests))
    base_wall = statistics.median(row[0] for row in results[("recorded", "heuristic")])
    print(f"{args.rounds} rounds x {3 * args.per_kind} cases per mode; medians over rounds")
    print(
        "| user | judge | wall ms/case | CPU ms/case | wall vs recorded+heuristic "
        "| judge calls/case | chatbot requests/case | passed/round |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for (user, judge), rows in results.items():
        wall, cpu, calls, passed, requests = (
            statistics.median(row[i] for row in rows) for i in range(5)
        )
        print(
            f"| {user} | {judge} | {wall * 1000:.1f} | {cpu * 1000:.1f} "
            f"| {wall / base_wall:.2f} | {calls:.1f} | {requests:.1f} | {passed:.0f} |"
        )


if __name__ == "__main__":
    main()
