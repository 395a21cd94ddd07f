"""`turnwatch sessions list|show|queue|import-reviews|export-reviews|promote`: the session store.

Exit codes: 0 fine, 2 usage, configuration or input error (a bad review line names the line and
imports nothing).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from turnwatch.app.regressions import _when
from turnwatch.exporters.sessions.curation import promote
from turnwatch.exporters.sessions.handler import StoreConfigError, open_store, sqlite_path
from turnwatch.exporters.sessions.model import SessionFilters, SessionSummary, key_value_pairs
from turnwatch.exporters.sessions.reviews import BadReviewLine, read_jsonl, write_jsonl
from turnwatch.exporters.sessions.store import SessionStore
from turnwatch.exporters.sessions.transcript import FindingView, Transcript, transcript
from turnwatch.schema import resource_attribute_key

COMMAND = "sessions"


def add_store_location(parser: argparse.ArgumentParser, default: Any = None) -> None:
    parser.add_argument("--config", type=Path, default=default, help="YAML configuration file")
    parser.add_argument(
        "--data-dir", type=Path, default=default, help="state directory holding sessions.db"
    )


def add_sessions_parser(subparsers: Any) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(COMMAND, help="list, show and review stored sessions")
    add_store_location(parser)
    located = argparse.ArgumentParser(add_help=False)
    add_store_location(located, default=argparse.SUPPRESS)
    actions = parser.add_subparsers(dest="sessions_command", required=True)

    def action(name: str, help: str) -> argparse.ArgumentParser:
        return actions.add_parser(name, help=help, parents=[located])

    listing = action("list", "list sessions, newest first")
    add_filters(listing)
    listing.add_argument("--limit", type=int, default=50, help="sessions to show (default 50)")
    listing.add_argument("--offset", type=int, default=0, help="skip this many first")
    listing.add_argument("--json", action="store_true", help="print JSON instead of a table")
    show = action("show", "print one session's transcript with its findings and metrics")
    show.add_argument("session_id", metavar="SESSION_ID")
    show.add_argument("--revision", type=int, help="default: the latest stored")
    show.add_argument("--json", action="store_true", help="print JSON instead of text")
    queue = action("queue", "sessions to review next: flagged first, then a stratified sample")
    queue.add_argument("--limit", type=int, default=50)
    queue.add_argument("--json", action="store_true")
    imports = action("import-reviews", "store reviews from a JSONL file (one review a line)")
    imports.add_argument("file", type=Path)
    exports = action("export-reviews", "write every stored review as JSONL")
    exports.add_argument("--output", "-o", type=Path, help="file to write (default stdout)")
    promoting = action("promote", "turn a reviewed session into a curated regression case")
    promoting.add_argument("session_id", metavar="SESSION_ID")
    promoting.add_argument("--revision", type=int)
    return parser


def add_filters(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--service")
    parser.add_argument("--version", help="the chatbot's service version")
    parser.add_argument("--check", help="a check that failed")
    parser.add_argument("--slice", help="a failure slice turnwatch tagged")
    parser.add_argument("--joint", choices=["success", "failure", "unscored"])
    parser.add_argument("--critical", action=argparse.BooleanOptionalAction, default=None)
    parser.add_argument("--flagged", action=argparse.BooleanOptionalAction, default=None)
    parser.add_argument("--since", type=_when, help="ISO time (UTC unless an offset is given)")
    parser.add_argument("--until", type=_when, help="ISO time (UTC unless an offset is given)")
    parser.add_argument(
        "--attribute",
        type=_attribute,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a resource attribute the session carries (repeatable), e.g. "
        "deployment.environment=prod",
    )


def _attribute(value: str) -> tuple[str, str]:
    try:
        pairs = key_value_pairs(value)
        if len(pairs) != 1 or not pairs[0][1]:
            raise ValueError(f"{value!r} is not key=value")
        [(name, text)] = pairs
        return resource_attribute_key(name), text
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def filters_of(args: argparse.Namespace) -> SessionFilters:
    names = ("service", "version", "check", "slice", "joint", "critical", "flagged")
    values = {name: getattr(args, name) for name in (*names, "since", "until")}
    return SessionFilters(**values, attributes=dict(args.attribute))


def store_from_args(args: argparse.Namespace, err: TextIO) -> tuple[Any, SessionStore] | None:
    """(settings, store), or None after printing why not (the exit code is then 2)."""
    from turnwatch.app.settings import ConfigError, load_settings

    overrides = {"data_dir": args.data_dir} if args.data_dir else None
    try:
        settings = load_settings(args.config, overrides)
    except ConfigError as exc:
        print(f"turnwatch: {exc}", file=err)
        return None
    config = settings.session_store
    path = sqlite_path(config, settings.data_dir)
    if config.backend == "sqlite" and not path.exists():
        print(f"turnwatch: no session store at {path} (run turnwatch serve or demo)", file=err)
        return None
    try:
        return settings, open_store(config, settings.data_dir)
    except (StoreConfigError, RuntimeError) as exc:
        print(f"turnwatch: {exc}", file=err)
        return None


StoreCommand = Callable[[argparse.Namespace, Any, SessionStore, TextIO, TextIO], int]


def store_command(body: StoreCommand) -> Callable[..., int]:
    """`body(args, settings, store, out, err)` as a CLI entry point `(args, out=, err=)`: the
    store opened from --config / --data-dir, exit 2 with a message when it cannot be."""

    def run(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
        out, err = out or sys.stdout, err or sys.stderr
        opened = store_from_args(args, err)
        if opened is None:
            return 2
        return body(args, *opened, out, err)

    return run


@store_command
def run_sessions(args, settings, store: SessionStore, out: TextIO, err: TextIO) -> int:
    command = args.sessions_command
    if command == "list":
        page = store.list(filters_of(args), max(1, args.limit), max(0, args.offset))
        if args.json:
            print(page.model_dump_json(indent=2), file=out)
        else:
            print_summaries(page.items, out)
            print(f"{len(page.items)} of {page.total} session revision(s)", file=out)
        return 0
    if command == "queue":
        queue = store.review_queue(settings.session_store.review_queue.unflagged_per_group)
        queue = queue[: max(1, args.limit)]
        if args.json:
            print(json.dumps([item.model_dump(mode="json") for item in queue], indent=2), file=out)
        else:
            print_summaries([item.summary for item in queue], out, [i.reason for i in queue])
        return 0
    if command == "import-reviews":
        try:
            with args.file.open(encoding="utf-8") as handle:
                reviews = read_jsonl(handle)
        except (OSError, UnicodeDecodeError, BadReviewLine) as exc:
            print(f"turnwatch: {args.file}: {exc}", file=err)
            return 2
        for review in reviews:
            store.put_review(review)
        print(f"imported {len(reviews)} review(s)", file=out)
        return 0
    if command == "export-reviews":
        if args.output is None:
            write_jsonl(store.reviews(), out)
        else:
            with args.output.open("w", encoding="utf-8") as handle:
                write_jsonl(store.reviews(), handle)
        return 0
    stored = store.get(args.session_id, args.revision)
    if stored is None:
        print(f"turnwatch: no stored session {args.session_id}", file=err)
        return 2
    if command == "promote":
        from turnwatch.app.roles import contract_lookup

        config = settings.session_store
        result = promote(
            store, stored, settings.data_dir, config.curated_dataset, settings.regressions,
            contract_lookup(settings),
        )  # fmt: skip
        print(result.message, file=out if result.case_id else err)
        return 0 if result.case_id else 2
    view = transcript(stored)
    if args.json:
        print(view.model_dump_json(indent=2), file=out)
    else:
        out.write(render_text(view))
    return 0


def print_summaries(
    items: list[SessionSummary], out: TextIO, reasons: list[str] | None = None
) -> None:
    print(
        f"{'SESSION':<34} {'REV':>3} {'SERVICE':<18} {'ENDED':<20} {'JOINT':<8} "
        f"{'CRIT':>4}  FAILED CHECKS",
        file=out,
    )
    for number, item in enumerate(items):
        joint = {True: "success", False: "FAILURE", None: "-"}[item.joint_success]
        ended = item.ended_at.strftime("%Y-%m-%d %H:%M:%S") if item.ended_at else "-"
        checks = ", ".join(item.failed_checks) or ("(awaiting score)" if not item.scored else "")
        line = (
            f"{item.session_id[:34]:<34} {item.revision:>3} {item.service[:18]:<18} {ended:<20} "
            f"{joint:<8} {item.critical:>4}  {checks}"
        )
        if reasons is not None:
            line += f"  [{reasons[number]}]"
        print(line, file=out)


def _finding_lines(finding: FindingView, indent: str) -> list[str]:
    mark = "CRITICAL " if finding.critical else ""
    lines = [f"{indent}!! {mark}{finding.severity} {finding.check}: {finding.explanation}"]
    if finding.evidence:
        evidence = ", ".join(f"{key}={value}" for key, value in finding.evidence.items())
        lines.append(f"{indent}   evidence: {evidence}")
    return lines


def render_text(view: Transcript) -> str:
    summary = view.summary
    joint = {True: "success", False: "FAILED", None: "unscored"}[summary.joint_success]
    lines = [
        f"session {summary.session_id} revision {summary.revision}  service {summary.service}"
        f" {summary.service_version or ''}".rstrip(),
    ]
    if summary.attributes:
        resource = ", ".join(f"{name}={value}" for name, value in summary.attributes.items())
        lines.append(f"resource: {resource}")
    lines += [
        f"joint success: {joint}   critical failures: {summary.critical}"
        f"   flagged: {'yes (' + ', '.join(summary.reasons) + ')' if summary.reasons else 'no'}",
    ]
    if view.joint_conditions:
        conditions = ", ".join(f"{k}={v}" for k, v in view.joint_conditions.items())
        lines.append(f"conditions: {conditions}")
    if view.first_broken:
        broken = view.first_broken
        lines.append(f"first broken transition: turn {broken['turn_index']} ({broken['check']})")
    if not view.complete:
        lines.append("(the session or its score record has not arrived yet)")
    lines.append("")
    for turn in view.turns:
        marker = f"  <== first broken transition ({turn.first_broken})" if turn.first_broken else ""
        lines.append(f"[{turn.index}] {turn.role}{marker}")
        if turn.text:
            lines.extend(f"    {line}" for line in turn.text.splitlines())
        for call in turn.tool_calls:
            lines.append(f"    -> tool {call.name} ({call.id or 'no id'})")
            lines.append(f"       arguments: {call.arguments or '-'}".replace("\n", "\n       "))
            outcome = f"error: {call.error}" if call.error else f"result: {call.result or '-'}"
            lines.append(f"       {outcome}".replace("\n", "\n       "))
        for finding in turn.findings:
            lines.extend(_finding_lines(finding, "    "))
    if view.session_findings:
        lines.append("")
        lines.append("whole-session findings:")
        for finding in view.session_findings:
            lines.extend(_finding_lines(finding, "  "))
    if view.metrics:
        lines.append("")
        lines.append("judge metrics:")
        for metric in view.metrics:
            value = f"{metric.value:.2f}" if metric.value is not None else "unscored"
            why = metric.explanation or metric.unscored_reason or ""
            turns = f" (turns {', '.join(map(str, metric.turns))})" if metric.turns else ""
            lines.append(f"  {metric.name} = {value} [{metric.judge}]{turns}: {why}")
    if view.unscored_checks:
        lines.append("")
        unscored = ", ".join(f"{check} ({reason})" for check, reason in view.unscored_checks)
        lines.append(f"unscored checks: {unscored}")
    return "\n".join(lines) + "\n"
