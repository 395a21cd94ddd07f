"""Online canary verdicts: the release gate on live sessions while two versions run side by side.

The exporter hands every newly counted score record that carries a `service_version` to
`CanaryGate.observe`. Per service it keeps the last `window_sessions` sessions of each version
(at most `max_versions` versions, the least recently seen dropped), and every
`evaluate_every_seconds` it compares the candidate with the baseline by the gate's rules
(`rules.py`, the `policy` block), unpaired: production sessions of two versions are different
conversations, so each side is resampled on its own. The candidate is `candidate_version`, else the
version that appeared last; the baseline is `baseline_version`, else the other version with the
most sessions in the window. Versions are not metric labels (they are not a small fixed set); the
verdict is per service, for the two versions being compared right now.

With the session store on, the windows are read from it instead (`shared.py`), so every exporter
replica compares the same sessions and exports the same verdict; a background task then
evaluates every `evaluate_every_seconds` whether or not this replica counted anything. Each side's
sessions are compared in session id order, so the verdict depends on which sessions the windows
hold, not on the order one process happened to take them in.

The comparison runs on one worker thread, off the bus consumer, on a snapshot of the windows, so a
bootstrap over thousands of sessions never holds up scoring or a scrape; a new evaluation is not
started while one runs. Gauges: `turnwatch_release_gate_verdict` (0 pass, 1 regression,
2 inconclusive; the `overall` rule is what a progressive-delivery controller reads),
`turnwatch_release_gate_difference` (candidate - baseline and its interval per rule) and
`turnwatch_release_gate_sessions` (the sessions compared per side).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

from prometheus_client import CollectorRegistry, Counter, Gauge
from pydantic import Field
from turnwatch.exporters.gate.evidence import CaseEvidence, session_evidence
from turnwatch.exporters.gate.policy import GatePolicy
from turnwatch.exporters.gate.rules import RuleResult, Verdict, all_rules, overall
from turnwatch.exporters.gate.sample import Sample
from turnwatch.exporters.gate.shared import FirstSeen, Windows

from turnwatch.scores import ScoreRecord
from turnwatch.section import Section

log = logging.getLogger("turnwatch.exporter")

VERDICT_VALUES = {Verdict.PASS: 0, Verdict.REGRESSION: 1, Verdict.INCONCLUSIVE: 2}


class CanaryConfig(Section):
    enabled: bool = Field(default=False, description="Compare two live versions per service.")
    baseline_version: str | None = Field(
        default=None, description="None: the version with most sessions besides the candidate."
    )
    candidate_version: str | None = Field(
        default=None, description="None: the version that appeared last."
    )
    window_sessions: int = Field(default=1000, ge=10, le=50_000, description="Per version.")
    max_versions: int = Field(default=4, ge=2, le=16, description="Versions kept per service.")
    evaluate_every_seconds: float = Field(default=60.0, ge=0)
    # Fewer resamples than the offline gate: the comparison repeats every minute, and 500 over
    # two windows of 1000 sessions cost about 1.2 CPU-s (pure Python) each time.
    policy: GatePolicy = Field(default_factory=lambda: GatePolicy(resamples=500))


class CanaryMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.verdict = Gauge(
            "turnwatch_release_gate_verdict",
            "Online release gate per rule: 0 pass, 1 regression, 2 inconclusive.",
            ["service", "rule"],
            registry=registry,
        )
        self.difference = Gauge(
            "turnwatch_release_gate_difference",
            "Candidate minus baseline per rule, with its bootstrap interval.",
            ["service", "rule", "bound"],
            registry=registry,
        )
        self.sessions = Gauge(
            "turnwatch_release_gate_sessions",
            "Sessions the online gate compares per side.",
            ["service", "side"],
            registry=registry,
        )
        self.evaluations = Counter(
            "turnwatch_release_gate_evaluations",
            "Online gate evaluations per service, by outcome (evaluated, no_pair).",
            ["outcome"],
            registry=registry,
        )


class CanaryGate:
    def __init__(
        self,
        registry: CollectorRegistry,
        config: CanaryConfig,
        shared: Callable[[], tuple[Windows, FirstSeen]] | None = None,
    ) -> None:
        self.config = config
        self.shared = shared
        """The windows every replica reads (the session store's); None = this process's."""
        self.metrics = CanaryMetrics(registry)
        self.checks = list(config.policy.rates)
        # service -> version -> session id -> its latest revision's evidence (most recently
        # seen version last; a new revision of a session replaces the old one)
        self.windows: dict[str, OrderedDict[str, OrderedDict[str, CaseEvidence]]] = {}
        self._first_seen: dict[tuple[str, str], int] = {}
        self._arrivals = 0
        self._lock = threading.Lock()
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="release-gate")
        self._running: Future[dict[str, list[RuleResult]]] | None = None
        self._last = time.monotonic()  # the first comparison waits a whole period

    def observe(self, service: str, record: ScoreRecord, now: float | None = None) -> None:
        """Keep one counted session (`service` is its admitted label value)."""
        version = record.service_version
        if version is None or self.shared is not None:
            return  # shared windows are filled by the session store's writes
        evidence = session_evidence(record, self.checks)
        with self._lock:
            versions = self.windows.setdefault(service, OrderedDict())
            if version not in versions:
                versions[version] = OrderedDict()
                self._arrivals += 1
                self._first_seen[(service, version)] = self._arrivals
                while len(versions) > self.config.max_versions:
                    dropped, _ = versions.popitem(last=False)
                    del self._first_seen[(service, dropped)]
            versions.move_to_end(version)
            window = versions[version]
            window.pop(record.session_id, None)
            window[record.session_id] = evidence
            if len(window) > self.config.window_sessions:
                window.popitem(last=False)
        self._maybe_evaluate(time.monotonic() if now is None else now)

    def _maybe_evaluate(self, now: float) -> None:
        if now - self._last < self.config.evaluate_every_seconds:
            return
        if self._running is not None and not self._running.done():
            return
        self._last = now
        self._running = self._worker.submit(self.evaluate)

    def evaluate(self) -> dict[str, list[RuleResult]]:
        """Compare the versions of every service now; the rules found, per service compared."""
        snapshot, first_seen = self._snapshot()
        found = {}
        for service, versions in snapshot.items():
            pair = self._pair(service, versions, first_seen)
            if pair is None:
                self.metrics.evaluations.labels("no_pair").inc()
                continue
            baseline, candidate = pair
            found[service] = self._publish(service, versions[baseline], versions[candidate])
            self.metrics.evaluations.labels("evaluated").inc()
        return found

    def _snapshot(self) -> tuple[Windows, FirstSeen]:
        if self.shared is not None:
            windows, first_seen = self.shared()
        else:
            with self._lock:
                windows = {
                    service: {version: list(window.values()) for version, window in kept.items()}
                    for service, kept in self.windows.items()
                }
                first_seen = {key: float(rank) for key, rank in self._first_seen.items()}
        for versions in windows.values():
            for evidence in versions.values():
                evidence.sort(key=lambda case: case.case_id)
        return windows, first_seen

    async def evaluate_periodically(self) -> None:
        """The shared windows' clock: evaluate every period (at least a second), on the worker."""
        period = max(self.config.evaluate_every_seconds, 1.0)
        while True:
            await asyncio.sleep(period)
            try:
                await asyncio.wrap_future(self._worker.submit(self.evaluate))
            except Exception as exc:
                # The store unreachable: the gauges keep the last verdict, the next period retries.
                log.warning("canary evaluation failed", extra={"error": type(exc).__name__})

    def _pair(
        self, service: str, versions: dict[str, list[CaseEvidence]], first_seen: dict
    ) -> tuple[str, str] | None:
        config = self.config
        candidate = config.candidate_version or max(
            versions, key=lambda version: first_seen[(service, version)]
        )
        others = [version for version in versions if version != candidate]
        baseline = config.baseline_version or max(
            others, key=lambda version: len(versions[version]), default=None
        )
        if baseline is None or baseline not in versions or candidate not in versions:
            return None
        return baseline, candidate

    def _publish(
        self, service: str, baseline: list[CaseEvidence], candidate: list[CaseEvidence]
    ) -> list[RuleResult]:
        policy = self.config.policy
        rules = all_rules(Sample(False, baseline, candidate, policy), policy)
        m = self.metrics
        m.sessions.labels(service, "baseline").set(len(baseline))
        m.sessions.labels(service, "candidate").set(len(candidate))
        for rule in rules:
            name = rule.rule + (f":{rule.slice}" if rule.slice else "")
            if rule.verdict in VERDICT_VALUES:
                m.verdict.labels(service, name).set(VERDICT_VALUES[rule.verdict])
            if rule.difference is not None:
                for bound in ("estimate", "low", "high"):
                    m.difference.labels(service, name, bound).set(getattr(rule.difference, bound))
        m.verdict.labels(service, "overall").set(VERDICT_VALUES[overall(rules)])
        return rules

    def wait(self) -> None:
        """Until the evaluation in flight, if any, has finished (shutdown and tests)."""
        running = self._running
        if running is not None:
            running.result()
