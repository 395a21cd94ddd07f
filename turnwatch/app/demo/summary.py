"""The demo's closing report: what turnwatch found in each conversation, and where to look next.

Built from the score records the observer saw and from the regression store on disk. It names
checks, slices, counts, metric means and the (pseudonymous) session ids to open in the web view
or with `turnwatch sessions show`: never message text or finding explanations.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from statistics import fmean

from turnwatch.app.demo.scripts import Script
from turnwatch.exporters.regressions.model import CaseSummary
from turnwatch.scores import Finding, ScoreRecord, Severity

_SEVERITY_ORDER = list(Severity)


@dataclass(frozen=True, slots=True)
class ConversationResult:
    script: Script
    score: ScoreRecord | None
    incident: bool
    session_id: str

    def findings(self) -> list[Finding]:
        if self.score is None:
            return []
        return [finding for result in self.score.results() for finding in result.findings]

    def checks_fired(self) -> list[str]:
        return sorted({finding.check for finding in self.findings()})

    def critical_checks(self) -> list[str]:
        if self.score is None:
            return []
        return sorted({finding.check for finding in self.score.critical_failures})

    def joint_success(self) -> bool | None:
        return None if self.score is None else self.score.joint_success.value

    def slices(self) -> list[str]:
        if self.score is None:
            return []
        return sorted({tag.slice.value for tag in self.score.slices})

    def missed(self) -> list[str]:
        """Expected checks that reported nothing (a demo claim that did not hold)."""
        fired = set(self.checks_fired())
        return [check for check in self.script.expected_checks if check not in fired]

    def as_expected(self) -> bool:
        if self.score is None:
            return False
        if self.script.healthy:
            return not self.critical_checks() and self.joint_success() is not False
        return not self.missed()


@dataclass(slots=True)
class DemoReport:
    results: list[ConversationResult]
    cases: list[CaseSummary]
    """Summaries of the cases seen during this run."""
    started_at: datetime
    elapsed_seconds: float
    data_dir: Path
    ops_url: str
    serving: bool
    incidents: int = 0

    @property
    def ok(self) -> bool:
        return all(result.as_expected() for result in self.results)

    def counts(self) -> dict[str, object]:
        """What the demo logs when it finishes: counts only, never content."""
        return {
            "conversations": len(self.results),
            "scored": sum(result.score is not None for result in self.results),
            "cases": len(self.cases),
            "as_expected": self.ok,
        }


def _table(headers: Sequence[str], rows: Iterable[Sequence[object]]) -> list[str]:
    cells = [[str(value) for value in row] for row in rows]
    widths = [
        max(len(header), *(len(row[column]) for row in cells)) if cells else len(header)
        for column, header in enumerate(headers)
    ]

    def line(values: Sequence[str]) -> str:
        return "  ".join(value.ljust(width) for value, width in zip(values, widths, strict=True))

    return [
        line(headers).rstrip(),
        line(["-" * width for width in widths]).rstrip(),
        *(line(row).rstrip() for row in cells),
    ]


def _joint(value: bool | None) -> str:
    return {True: "pass", False: "FAIL", None: "n/a"}[value]


def _conversations(report: DemoReport) -> list[str]:
    rows = []
    for result in report.results:
        if result.score is None:
            verdict = "NOT SCORED"
        elif result.as_expected():
            verdict = "as expected"
        elif result.script.healthy:
            verdict = "UNEXPECTED FAILURE"
        else:
            verdict = "MISSED " + ",".join(result.missed())
        rows.append(
            (
                result.script.name,
                result.script.slice,
                _joint(result.joint_success()),
                ",".join(result.critical_checks()) or "-",
                ",".join(result.checks_fired()) or "-",
                ",".join(result.slices()) or "-",
                "yes" if result.incident else "-",
                verdict,
                result.session_id,
            )
        )
    headers = (
        "scenario",
        "slice",
        "joint",
        "critical",
        "checks with findings",
        "tagged",
        "incident",
        "result",
        "session",
    )
    return _table(headers, rows)


def _findings_by_check(results: list[ConversationResult]) -> list[str]:
    sessions: Counter[str] = Counter()
    findings: Counter[str] = Counter()
    worst: dict[str, Severity] = {}
    for result in results:
        seen = set()
        for finding in result.findings():
            check = finding.check
            findings[check] += 1
            seen.add(check)
            severity = finding.severity
            known = worst.get(check)
            if known is None or _SEVERITY_ORDER.index(severity) > _SEVERITY_ORDER.index(known):
                worst[check] = severity
        sessions.update(seen)
    rows = [
        (check, sessions[check], findings[check], worst[check].value)
        for check in sorted(findings, key=lambda name: (-findings[name], name))
    ]
    return _table(("check", "sessions", "findings", "worst severity"), rows)


def _metrics(results: list[ConversationResult]) -> tuple[list[str], set[str]]:
    values: defaultdict[str, list[float]] = defaultdict(list)
    unscored: Counter[str] = Counter()
    judges: set[str] = set()
    for result in results:
        for score in result.score.metrics if result.score is not None else []:
            judge = score.metadata.get("judge")
            if isinstance(judge, str):
                judges.add(judge)
            if score.value is None:
                unscored[score.name] += 1
            else:
                values[score.name].append(score.value)
    names = sorted(set(values) | set(unscored))
    rows = [
        (
            name,
            f"{fmean(values[name]):.2f}" if values[name] else "-",
            len(values[name]),
            unscored[name],
        )
        for name in names
    ]
    return _table(("metric", "mean", "scored", "unscored"), rows), judges


def render(report: DemoReport) -> str:
    results = report.results
    scored = sum(result.score is not None for result in results)
    lines = [
        "",
        f"turnwatch demo: {len(results)} conversations sent, {scored} sessions scored "
        f"in {report.elapsed_seconds:.1f} s",
        "",
        "CONVERSATIONS",
        "  joint: strict joint success (n/a: a condition could not be evaluated); tagged: failure",
        "  slices turnwatch tagged; incident: flagged and kept as a regression case",
        "",
        *_conversations(report),
        "",
        "FINDINGS BY CHECK",
        *_findings_by_check(results),
        "",
        *_judge_metrics(results),
        "",
        _critical_failures(results),
        *_incidents(report),
        "",
        *_expectations(results),
        "",
        *_where_to_look(report),
    ]
    return "\n".join(lines) + "\n"


def _judge_metrics(results: list[ConversationResult]) -> list[str]:
    metric_lines, judges = _metrics(results)
    heuristic = "heuristic" in judges or not judges
    judge_note = (
        "HEURISTIC built-in judge: no model, no network; indicative only"
        if heuristic
        else f"judge: {', '.join(sorted(judges))}"
    )
    return [f"JUDGE METRICS ({judge_note})", *metric_lines]


def _critical_failures(results: list[ConversationResult]) -> str:
    critical: Counter[str] = Counter(
        check for result in results for check in result.critical_checks()
    )
    critical_text = ", ".join(f"{check} {count}" for check, count in sorted(critical.items()))
    sessions_with_critical = sum(bool(result.critical_checks()) for result in results)
    return f"CRITICAL FAILURES: {sessions_with_critical} sessions" + (
        f" ({critical_text})" if critical_text else ""
    )


def _incidents(report: DemoReport) -> list[str]:
    new = sum(case.first_seen >= report.started_at for case in report.cases)
    lines = [
        f"INCIDENTS: {report.incidents} flagged sessions -> {len(report.cases)} regression cases "
        f"({new} new, {len(report.cases) - new} recurring) in {_cases_dir(report)}",
    ]
    if report.cases:
        lines += ["", *_table(("case", "check", "count"), _case_rows(report.cases))]
    return lines


def _expectations(results: list[ConversationResult]) -> list[str]:
    healthy = [result for result in results if result.script.healthy]
    failing = [result for result in results if not result.script.healthy]
    return [
        f"EXPECTATIONS: healthy {sum(r.as_expected() for r in healthy)}/{len(healthy)} without "
        f"critical failures, failure slices {sum(r.as_expected() for r in failing)}/"
        f"{len(failing)} caught by their expected check",
    ]


def failed_session(report: DemoReport) -> str | None:
    """The session to open first: one with a critical failure, else a failed joint success."""
    for wanted in (lambda r: bool(r.critical_checks()), lambda r: r.joint_success() is False):
        found = [result for result in report.results if wanted(result)]
        if found:
            return found[0].session_id
    return None


def _where_to_look(report: DemoReport) -> list[str]:
    live = "" if report.serving else "   (live with --keep-serving)"
    first = failed_session(report)
    opened = [f"  failed session {report.ops_url}/ui/sessions/{first}" + live] if first else []
    return [
        "WHERE TO LOOK",
        f"  web view       {report.ops_url}/ui/" + live,
        "                 (failed sessions first: click one for its transcript and findings)",
        *opened,
        f"  sessions       turnwatch sessions --data-dir {report.data_dir} list",
        f"  one session    turnwatch sessions --data-dir {report.data_dir} show <session>",
        f"  metrics        {report.ops_url}/metrics" + live,
        f"  incidents API  {report.ops_url}/api/incidents" + live,
        f"  incident files {_cases_dir(report)}/",
        # --data-dir belongs to `regressions`, so it goes before the action.
        f"  list cases     turnwatch regressions --data-dir {report.data_dir} list",
        f"  one case       turnwatch regressions --data-dir {report.data_dir} show <case>",
    ]


def _cases_dir(report: DemoReport) -> Path:
    return (report.data_dir / "regressions").resolve()


def _case_rows(cases: list[CaseSummary]) -> list[tuple[object, ...]]:
    ordered = sorted(cases, key=lambda case: (case.check, case.id))
    return [(case.id, case.check, case.occurrence_count) for case in ordered]
