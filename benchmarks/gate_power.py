"""How many paired sessions does the release gate need to see a 5-point joint-success drop?

Simulates paired replays of n cases on two releases and runs the gate's own joint-success rule
(`exporters/gate/rules.py`, the default policy's 95% bootstrap interval) on each, counting how
often it reports the drop as a regression (power) and, on releases without a drop, how often it
cries regression anyway (false alarms). Each case passes on the baseline with probability p0; the
candidate breaks a share of the passing cases so that joint success drops by `--drop` points:

- clean: the cases are deterministic (a case that passes on one release passes on the other
  unless the candidate broke it), the way replays of deterministic chatbots behave;
- flaky: in addition each case's outcome is redrawn on each side with probability `--flake`
  (a flaky chatbot or simulated user), so discordant pairs go both ways.

"unpaired" runs the same rule on n independent sessions per side (production sessions of two
versions), for comparison. The "planned" column is the gate's own sample-size figure for the
drop, the median over the simulated samples (it plans with their observed variance).
Run: `python benchmarks/gate_power.py`.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from turnwatch.exporters.gate.evidence import CaseEvidence
from turnwatch.exporters.gate.policy import GatePolicy
from turnwatch.exporters.gate.rules import Verdict, joint_rule
from turnwatch.exporters.gate.sample import Sample


def case(number: int, passed: bool) -> CaseEvidence:
    return CaseEvidence(
        case_id=f"case-{number}",
        slices=[],
        runs=1,
        joint=float(passed),
        critical=0,
        failing=[],
        checks={},
        latencies_ms=[],
        costs_usd=[],
        successes=int(passed),
    )


def releases(
    rng: random.Random, n: int, p0: float, drop: float, flake: float
) -> tuple[list[bool], list[bool]]:
    baseline = [rng.random() < p0 for _ in range(n)]
    broken = drop / p0  # the share of passing cases the candidate breaks
    candidate = [passed and rng.random() >= broken for passed in baseline]

    def redrawn(outcomes: list[bool], rate: float) -> list[bool]:
        return [rng.random() < rate if rng.random() < flake else x for x in outcomes]

    return redrawn(baseline, p0), redrawn(candidate, p0 - drop)


def rule(before: list[bool], after: list[bool], paired: bool, policy: GatePolicy):
    offset = 0 if paired else len(before)  # unpaired: no case in common
    sample = Sample(
        paired,
        [case(i, x) for i, x in enumerate(before)],
        [case(i + offset, x) for i, x in enumerate(after)],
        policy,
    )
    return joint_rule(sample, policy)


DESIGNS = {
    "paired, clean": (False, True, "50,100,150,200,300"),
    "paired, flaky": (True, True, "100,200,300,400,600"),
    "unpaired sessions": (False, False, "300,600,1200"),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--simulations", type=int, default=200)
    parser.add_argument("--p0", type=float, default=0.85, help="baseline joint success")
    parser.add_argument("--drop", type=float, default=0.05)
    parser.add_argument("--flake", type=float, default=0.2)
    parser.add_argument("--resamples", type=int, default=500)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--design", choices=list(DESIGNS), action="append")
    parser.add_argument("--sizes", help="n per side, comma-separated (default: per design)")
    args = parser.parse_args()
    policy = GatePolicy(resamples=args.resamples)
    rng = random.Random(args.seed)
    print(
        f"baseline joint success {args.p0}, drop {args.drop}, flake {args.flake}, "
        f"{args.simulations} simulations per row, {args.resamples} bootstrap resamples"
    )
    print(
        "| design | n per side | planned n (median) | power: drop found | no drop: "
        "false alarm | no drop: pass | CPU s |"
    )
    print("|---|---|---|---|---|---|---|")
    for design in args.design or list(DESIGNS):
        flaky, paired, sizes = DESIGNS[design]
        flake = args.flake if flaky else 0.0
        for n in (int(size) for size in (args.sizes or sizes).split(",")):
            started = time.process_time()
            found = alarms = passes = 0
            planned = []
            for _ in range(args.simulations):
                dropped = rule(*releases(rng, n, args.p0, args.drop, flake), paired, policy)
                planned.append(dropped.needed or 0)
                found += dropped.verdict is Verdict.REGRESSION
                same = rule(*releases(rng, n, args.p0, 0.0, flake), paired, policy).verdict
                alarms += same is Verdict.REGRESSION
                passes += same is Verdict.PASS
            cpu = time.process_time() - started
            runs = args.simulations
            print(
                f"| {design} | {n} | {statistics.median(planned):.0f} | {found / runs:.2f} "
                f"| {alarms / runs:.2f} | {passes / runs:.2f} | {cpu:.1f} |"
            )


if __name__ == "__main__":
    main()
