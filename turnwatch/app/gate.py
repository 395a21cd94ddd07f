"""`turnwatch gate --baseline A --candidate B`: the release gate on two releases' evidence.

A and B are replay result files (`turnwatch regressions replay --out`) or selections of
production sessions from the session store (`store:deployment.environment=prod,version=1.3,
since=2026-11-01`: the store's filters and resource attributes, `exporters/gate/selection.py`;
the store from --config / --data-dir). Prints the report as a table (or `--json`),
optionally writes it as Markdown for a pull request (`--markdown FILE`), and exits 0 pass,
1 regression, 2 inconclusive (too few cases to decide), 3 error (a file or store that cannot be
read, a selection or policy that does not validate, a bad option). argparse's own usage errors
exit 2, which would read as "inconclusive", so this parser exits 3 instead.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, NoReturn, TextIO

from turnwatch.app.sessions import add_store_location, store_from_args

EXIT_ERROR = 3


def add_gate_parser(subparsers: Any) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "gate",
        help="compare two releases (replay results or stored sessions): exit 0 pass, "
        "1 regression, 2 inconclusive, 3 error",
    )
    source = (
        "a replay result file, or store:KEY=VALUE,... (sessions from the session store: filters "
        "service, version, slice, check, since, until, ... and resource attributes such as "
        "deployment.environment)"
    )
    parser.add_argument("--baseline", required=True, help=f"baseline: {source}")
    parser.add_argument("--candidate", required=True, help=f"candidate: {source}")
    parser.add_argument("--policy", type=Path, help="gate policy YAML (default: the guide's rules)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--markdown", type=Path, help="also write the report as Markdown here")
    parser.add_argument(
        "--max-sessions", type=int, default=10_000, help="sessions read per store selection"
    )
    add_store_location(parser)

    def usage_error(message: str) -> NoReturn:
        parser.print_usage(sys.stderr)
        print(f"turnwatch gate: error: {message}", file=sys.stderr)
        sys.exit(EXIT_ERROR)

    parser.error = usage_error  # type: ignore[method-assign]
    return parser


class GateInputError(Exception):
    """One side cannot be read (the message says why; already printed when empty)."""


def run_gate(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    from turnwatch.exporters.gate.policy import PolicyInvalid, load_policy
    from turnwatch.exporters.gate.report import gate, markdown, table

    out, err = out or sys.stdout, err or sys.stderr
    try:
        policy = load_policy(args.policy)
        baseline, candidate = _sides(args, policy, err)
    except PolicyInvalid as exc:
        print(f"turnwatch: {exc}", file=err)
        return EXIT_ERROR
    except GateInputError as exc:
        if str(exc):
            print(f"turnwatch: {exc}", file=err)
        return EXIT_ERROR
    report = gate(baseline, candidate, policy)
    print(report.model_dump_json(indent=1) if args.json else table(report), file=out)
    if args.markdown is not None:
        try:
            args.markdown.write_text(markdown(report), encoding="utf-8")
        except OSError as exc:
            print(f"turnwatch: cannot write {args.markdown}: {exc.strerror or exc}", file=err)
            return EXIT_ERROR
    return report.exit_code


def _sides(args: argparse.Namespace, policy: Any, err: TextIO) -> tuple[Any, Any]:
    from turnwatch.exporters.gate.report import replay_side, sessions_side
    from turnwatch.exporters.gate.selection import (
        SelectionInvalid,
        check_attributes,
        is_selection,
        parse_selection,
        select_records,
        selection_label,
    )
    from turnwatch.exporters.regressions.results import ReplayFileInvalid, load_replay

    store = None
    sides = []
    for label, value in (("baseline", args.baseline), ("candidate", args.candidate)):
        if not is_selection(value):
            try:
                sides.append(replay_side(load_replay(Path(value)), policy, label))
            except ReplayFileInvalid as exc:
                raise GateInputError(str(exc)) from None
            continue
        try:
            filters = parse_selection(value)
        except SelectionInvalid as exc:
            raise GateInputError(str(exc)) from None
        if store is None:
            opened = store_from_args(args, err)
            if opened is None:
                raise GateInputError("")
            store = opened[1]
        try:
            check_attributes(store, filters)
        except SelectionInvalid as exc:
            raise GateInputError(str(exc)) from None
        records = select_records(store, filters, max(1, args.max_sessions))
        sides.append(sessions_side(records, policy, selection_label(filters, label)))
    return sides[0], sides[1]
