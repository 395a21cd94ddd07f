"""`turnwatch regressions list|show|export|replay`: the regression cases under --data-dir.

`turnwatch/app/cli.py` adds the sub-command with `add_regressions_parser(commands)` and dispatches
`args.command == "regressions"` to `run_regressions(args)`. Exit codes: 0 fine, 1 a replayed case
failed (or could not be replayed), 2 usage or configuration error. Replay itself runs in
`turnwatch/app/replay.py`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from turnwatch.exporters.regressions.export import FORMATS, to_deepeval_json, to_jsonl, to_pytest
from turnwatch.exporters.regressions.model import Case, iso
from turnwatch.exporters.regressions.query import Filters, paginate
from turnwatch.exporters.regressions.store import CaseStore, regressions_dir

COMMAND = "regressions"


def add_regressions_parser(subparsers: Any) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(COMMAND, help="list, show, export and replay regression cases")
    _locations(parser, default=None)
    # Accepted after the action too (`regressions list --data-dir X`); SUPPRESS keeps an option
    # given before the action from being reset by the action's default.
    located = argparse.ArgumentParser(add_help=False)
    _locations(located, default=argparse.SUPPRESS)
    actions = parser.add_subparsers(dest="regressions_command", required=True)

    def action(name: str, help: str) -> argparse.ArgumentParser:
        return actions.add_parser(name, help=help, parents=[located])

    listing = action("list", "list cases, most recently seen first")
    _filters(listing)
    listing.add_argument("--limit", type=int, default=50, help="cases to show (default 50)")
    listing.add_argument("--json", action="store_true", help="print JSON instead of a table")

    show = action("show", "print one case as JSON")
    show.add_argument("case_id", metavar="ID")

    export = action("export", "write cases in another format")
    export.add_argument("--format", choices=FORMATS, required=True)
    export.add_argument("--output", "-o", type=Path, help="file to write (default stdout)")
    _filters(export)

    replay = action("replay", "replay cases against a new chatbot version")
    replay.add_argument("--target", required=True, help="OpenAI-compatible base URL (…/v1)")
    replay.add_argument("--model", help="model name to send (default: the case's model)")
    replay.add_argument(
        "--api-key-env",
        default="TURNWATCH_REPLAY_API_KEY",
        help="environment variable holding the target's bearer token",
    )
    replay.add_argument("--case", action="append", default=[], help="replay only this case id")
    replay.add_argument(
        "--scenario",
        action="append",
        type=Path,
        default=[],
        help="a scenario file (dataset schema) or a directory of them, replayed instead of the "
        "stored cases",
    )
    replay.add_argument(
        "--no-system-prompt",
        action="store_true",
        help="do not send the recorded system prompt (the target brings its own)",
    )
    replay.add_argument("--repeat", type=int, default=1, help="runs per case (default 1)")
    replay.add_argument("--out", type=Path, help="write every run, scored, to this JSON file")
    replay.add_argument("--release", help="name of the release under test (stored in --out)")
    replay.add_argument(
        "--user",
        choices=["scripted", "recorded", "llm"],
        default="scripted",
        help="who speaks for the user: the deterministic simulated user (default), the "
        "recorded turns verbatim, or a model (--simulator-url)",
    )
    replay.add_argument("--simulator-url", help="OpenAI-compatible base URL of --user llm")
    replay.add_argument("--simulator-model", default="gpt-4o-mini", help="model of --user llm")
    replay.add_argument("--simulator-seed", type=int, default=0, help="seed of --user llm")
    replay.add_argument(
        "--simulator-api-key-env",
        default="TURNWATCH_SIMULATOR_API_KEY",
        help="environment variable holding the simulator endpoint's bearer token",
    )
    _filters(replay)
    return parser


def _locations(parser: argparse.ArgumentParser, default: Any) -> None:
    parser.add_argument("--config", type=Path, default=default, help="YAML configuration file")
    parser.add_argument(
        "--data-dir", type=Path, default=default, help="state directory holding regressions/"
    )


def _filters(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--service")
    parser.add_argument("--check")
    parser.add_argument("--slice")
    parser.add_argument("--since", type=_when, help="ISO time (UTC unless an offset is given)")
    parser.add_argument("--until", type=_when, help="ISO time (UTC unless an offset is given)")


def _when(value: str) -> datetime:
    moment = datetime.fromisoformat(value)
    # Stored times carry an offset; a naive one could not be compared with them.
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def run_regressions(
    args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None
) -> int:
    # Resolved per call, not at import: a caller that redirects sys.stdout is heard.
    out, err = out or sys.stdout, err or sys.stderr
    from turnwatch.app.settings import ConfigError, load_settings

    overrides = {"data_dir": args.data_dir} if args.data_dir else None
    try:
        settings = load_settings(args.config, overrides)
    except ConfigError as exc:
        print(f"turnwatch: {exc}", file=err)
        return 2
    store = CaseStore(regressions_dir(settings.data_dir), settings.regressions)
    command = args.regressions_command
    if command == "show":
        case = store.get(args.case_id)
        if case is None:
            print(f"turnwatch: no regression case {args.case_id}", file=err)
            return 2
        print(json.dumps(case.to_json(), indent=2, ensure_ascii=False), file=out)
        return 0
    filters = Filters(args.service, args.check, args.slice, args.since, args.until)
    if command == "list":
        return _list(store, filters, args, out)
    if command == "replay" and args.scenario:
        return _replay_scenarios(settings, args, out, err)
    summaries = paginate(store.summaries(), filters, limit=10**9).items
    ids = [item.id for item in summaries]
    if command == "replay" and args.case:
        missing = sorted(set(args.case) - set(ids))
        if missing:
            print(f"turnwatch: no regression case {', '.join(missing)}", file=err)
            return 2
        ids = [case_id for case_id in ids if case_id in args.case]
    cases = [case for case_id in ids if (case := store.get(case_id)) is not None]
    if command == "export":
        return _export(cases, args, out)
    from turnwatch.exporters.regressions.scenario import Scenario

    return _replay([Scenario.of_case(case) for case in cases], settings, args, out, err)


def _list(store: CaseStore, filters: Filters, args: argparse.Namespace, out: TextIO) -> int:
    page = paginate(store.summaries(), filters, limit=max(args.limit, 1))
    if args.json:
        items = [item.to_json() for item in page.items]
        print(json.dumps({"items": items, "total": page.total}, indent=2), file=out)
        return 0
    print(f"{'ID':<20} {'COUNT':>5}  {'LAST SEEN':<25} {'SERVICE':<20} CHECK", file=out)
    for item in page.items:
        last_seen = iso(item.last_seen)[:25]
        print(
            f"{item.id:<20} {item.occurrence_count:>5}  {last_seen:<25} "
            f"{item.service[:20]:<20} {item.check}",
            file=out,
        )
    print(f"{len(page.items)} of {page.total} case(s)", file=out)
    return 0


def _export(cases: list[Case], args: argparse.Namespace, out: TextIO) -> int:
    text = {"jsonl": to_jsonl, "deepeval": to_deepeval_json, "pytest": to_pytest}[args.format](
        cases
    )
    if args.output is None:
        out.write(text)
    else:
        args.output.write_text(text, encoding="utf-8")
    return 0


def _replay_scenarios(settings: Any, args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from turnwatch.exporters.regressions.scenario import ScenarioInvalid, load_scenarios

    try:
        scenarios = load_scenarios(args.scenario)
    except ScenarioInvalid as exc:
        print(f"turnwatch: {exc}", file=err)
        return 2
    return _replay(scenarios, settings, args, out, err)


def _replay(scenarios, settings, args, out: TextIO, err: TextIO) -> int:
    from turnwatch.app.replay import ReplayUsageError, run_replay

    if not scenarios:
        print("turnwatch: no regression cases to replay", file=err)
        return 2
    try:
        return run_replay(scenarios, settings, args, out, err)
    except ReplayUsageError as exc:
        print(f"turnwatch: {exc}", file=err)
        return 2


def replay_from_environment(case: dict[str, Any]):  # -> ReplayRun (lazy imports: pytest start)
    """The step of a module `regressions export --format pytest` writes: settings from the
    environment, one case (as its JSON) validated and replayed."""
    from pathlib import Path

    import pytest

    from turnwatch.app.settings import load_settings
    from turnwatch.exporters.regressions.chat import ChatClient
    from turnwatch.exporters.regressions.config import RegressionConfig
    from turnwatch.exporters.regressions.replay import ReplayOptions, Scoring, replay_scenario
    from turnwatch.exporters.regressions.scenario import Scenario
    from turnwatch.scorers.runner import Scorer

    target = os.environ.get("TURNWATCH_REPLAY_TARGET")
    if not target:
        pytest.skip("set TURNWATCH_REPLAY_TARGET to the chatbot's OpenAI-compatible endpoint")
    config_path = os.environ.get("TURNWATCH_CONFIG")
    settings = load_settings(Path(config_path) if config_path else None)
    regressions = getattr(settings, "regressions", RegressionConfig())
    client = ChatClient(
        target,
        timeout=regressions.replay_timeout_seconds,
        api_key=os.environ.get("TURNWATCH_REPLAY_API_KEY"),
    )
    scoring = Scoring(Scorer(settings.scorers))
    options = ReplayOptions(
        model=os.environ.get("TURNWATCH_REPLAY_MODEL"),
        max_tool_rounds=regressions.replay_max_tool_rounds,
    )
    try:
        return replay_scenario(
            Scenario.of_case(Case.model_validate(case)), client, scoring, options=options
        )
    finally:
        client.close()
        scoring.close()
