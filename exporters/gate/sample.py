"""The two releases' evidence, paired by case when the same cases were replayed on both.

Paired (the cases both files hold): every interval resamples cases, each with its baseline and
candidate runs together, so a case's own difficulty cancels out of the difference. Unpaired (no
case in common, e.g. two sets of production sessions): each side is resampled on its own.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from turnwatch.exporters.gate.evidence import CaseEvidence, ReleaseEvidence
from turnwatch.exporters.gate.policy import GatePolicy
from turnwatch.exporters.gate.stats import (
    Interval,
    Power,
    bootstrap,
    bootstrap_two,
    power,
    power_unpaired,
)

Statistic = Callable[[Sequence[CaseEvidence]], float | None]


@dataclass
class Sample:
    paired: bool
    baseline: list[CaseEvidence]
    candidate: list[CaseEvidence]
    policy: GatePolicy

    @classmethod
    def of(cls, baseline: ReleaseEvidence, candidate: ReleaseEvidence, policy: GatePolicy):
        common = sorted(baseline.cases.keys() & candidate.cases.keys())
        if common:
            return cls(
                True,
                [baseline.cases[case] for case in common],
                [candidate.cases[case] for case in common],
                policy,
            )
        return cls(False, list(baseline.cases.values()), list(candidate.cases.values()), policy)

    def only(self, keep: Callable[[CaseEvidence], bool]) -> Sample:
        """The cases `keep` accepts (paired: the pairs it accepts on both sides)."""
        if self.paired:
            pairs = [
                (b, c)
                for b, c in zip(self.baseline, self.candidate, strict=True)
                if keep(b) and keep(c)
            ]
            return Sample(True, [b for b, _ in pairs], [c for _, c in pairs], self.policy)
        return Sample(
            False,
            [case for case in self.baseline if keep(case)],
            [case for case in self.candidate if keep(case)],
            self.policy,
        )

    @property
    def size(self) -> int:
        return len(self.candidate) if self.paired else min(len(self.baseline), len(self.candidate))

    def difference(self, statistic: Statistic) -> Interval | None:
        """statistic(candidate) - statistic(baseline), with its bootstrap interval."""

        def delta(base: Sequence[CaseEvidence], cand: Sequence[CaseEvidence]) -> float | None:
            before, after = statistic(base), statistic(cand)
            return None if before is None or after is None else after - before

        policy = self.policy
        if self.paired:
            pairs = list(zip(self.baseline, self.candidate, strict=True))
            return bootstrap(
                pairs,
                lambda drawn: delta([b for b, _ in drawn], [c for _, c in drawn]),
                policy.resamples,
                policy.confidence,
                policy.seed,
            )
        return bootstrap_two(
            self.baseline, self.candidate, delta, policy.resamples, policy.confidence, policy.seed
        )

    def candidate_interval(self, statistic: Statistic) -> Interval | None:
        policy = self.policy
        return bootstrap(
            self.candidate, statistic, policy.resamples, policy.confidence, policy.seed
        )

    def power(self, value: Callable[[CaseEvidence], float], effect: float) -> Power:
        """How small a drop of `value`'s mean this sample detects, and the size it needs."""
        confidence, wanted = self.policy.confidence, self.policy.power
        if self.paired:
            differences = [
                value(c) - value(b) for b, c in zip(self.baseline, self.candidate, strict=True)
            ]
            return power(differences, effect, confidence, wanted)
        return power_unpaired(
            [value(case) for case in self.baseline],
            [value(case) for case in self.candidate],
            effect,
            confidence,
            wanted,
        )
