"""`turnwatch gate --baseline A --candidate B`: the release gate on two replay result files.

Prints the report as a table (or `--json`), optionally writes it as Markdown for a pull request
(`--markdown FILE`), and exits 0 pass, 1 regression, 2 inconclusive (too few cases to decide),
3 error (a file that cannot be read, a policy that does not validate, a bad option). argparse's
own usage errors exit 2, which would read as "inconclusive", so this parser exits 3 instead.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, NoReturn, TextIO

EXIT_ERROR = 3


def add_gate_parser(subparsers: Any) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "gate", help="compare two releases' replay results: 0 pass, 1 regression, 2 inconclusive"
    )
    parser.add_argument("--baseline", type=Path, required=True, help="baseline replay result file")
    parser.add_argument(
        "--candidate", type=Path, required=True, help="candidate replay result file"
    )
    parser.add_argument("--policy", type=Path, help="gate policy YAML (default: the guide's rules)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--markdown", type=Path, help="also write the report as Markdown here")

    def usage_error(message: str) -> NoReturn:
        parser.print_usage(sys.stderr)
        print(f"turnwatch gate: error: {message}", file=sys.stderr)
        sys.exit(EXIT_ERROR)

    parser.error = usage_error  # type: ignore[method-assign]
    return parser


def run_gate(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out, err = out or sys.stdout, err or sys.stderr
    from turnwatch.exporters.gate.policy import PolicyInvalid, load_policy
    from turnwatch.exporters.gate.report import gate, markdown, table
    from turnwatch.exporters.regressions.results import ReplayFileInvalid, load_replay

    try:
        policy = load_policy(args.policy)
        baseline, candidate = load_replay(args.baseline), load_replay(args.candidate)
    except (PolicyInvalid, ReplayFileInvalid) as exc:
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
