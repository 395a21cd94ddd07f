"""`turnwatch regressions replay`: every case K times against a target, printed and saved.

Each run's report goes to stdout, then the counts (passed, failed, left to the simulator, not
replayed) and pass^k for k = 1..K; `--out FILE` writes every run with its transcript and score
record (`exporters/regressions/results.py`), the file `turnwatch gate` compares. Exit code 1
when a run failed or could not be replayed; runs whose failure is the simulator's do not fail
the command (they are listed for review).
"""

from __future__ import annotations

import argparse
import os
from datetime import UTC, datetime
from typing import Any, TextIO
from urllib.parse import urlsplit, urlunsplit

from turnwatch import __version__
from turnwatch.exporters.regressions.chat import ChatClient
from turnwatch.exporters.regressions.profile import profile_of
from turnwatch.exporters.regressions.replay import (
    MakeUser,
    ReplayOptions,
    Scoring,
    recorded_user,
    replay_all,
    scripted_user,
)
from turnwatch.exporters.regressions.results import ReplayFile, ReplayRun, summarise
from turnwatch.exporters.regressions.scenario import Scenario
from turnwatch.exporters.regressions.simulator import SimulatedUser, SimulatorInfo
from turnwatch.exporters.regressions.simulator_llm import LlmUser, llm_info
from turnwatch.scorers.contract import Contract
from turnwatch.scorers.runner import Scorer


class ReplayUsageError(Exception):
    """The replay's options do not fit together (the message says how)."""


def simulated_users(
    args: argparse.Namespace, timeout: float
) -> tuple[MakeUser, SimulatorInfo, ChatClient | None]:
    """The user factory `--user` names, what the result file records about it, and the
    simulator endpoint's client to close afterwards (a model's only)."""
    if args.user == "recorded":
        return recorded_user, SimulatorInfo(kind="recorded"), None
    if args.user == "scripted":
        return scripted_user, SimulatorInfo(kind="scripted"), None
    if not args.simulator_url:
        raise ReplayUsageError("--user llm needs --simulator-url (an OpenAI-compatible endpoint)")
    client = ChatClient(
        args.simulator_url, timeout=timeout, api_key=os.environ.get(args.simulator_api_key_env)
    )
    model, seed = args.simulator_model, args.simulator_seed

    def llm_user(scenario: Scenario, contract: Contract | None, repeat: int) -> SimulatedUser:
        # One seed per repetition, derived from the base: runs differ, reproducibly.
        return LlmUser(profile_of(scenario, contract), contract, client, model, seed + repeat)

    return llm_user, llm_info(model, seed, 0.0), client


def run_replay(
    scenarios: list[Scenario], settings: Any, args: argparse.Namespace, out: TextIO, err: TextIO
) -> int:
    if args.repeat < 1:
        raise ReplayUsageError("--repeat must be at least 1")
    config = settings.regressions
    make_user, info, simulator_client = simulated_users(args, config.replay_timeout_seconds)
    client = ChatClient(
        args.target,
        timeout=config.replay_timeout_seconds,
        api_key=os.environ.get(args.api_key_env),
    )
    scoring = Scoring(Scorer(settings.scorers))
    options = ReplayOptions(
        model=args.model,
        max_tool_rounds=config.replay_max_tool_rounds,
        send_system_prompt=not args.no_system_prompt,
        repeat=args.repeat,
        release=args.release,
    )
    started = datetime.now(UTC)
    try:
        runs = replay_all(scenarios, client, scoring, make_user, options, _progress(err))
    finally:
        client.close()
        scoring.close()
        if simulator_client is not None:
            simulator_client.close()
    for run in runs:
        print(run.report(), file=out)
    summary = summarise(runs, args.repeat)
    counts = f"{summary.passed} passed, {summary.failed} failed"
    if summary.simulator:
        counts += f", {summary.simulator} failed where the simulated user was unsure"
    if summary.error:
        counts += f", {summary.error} not replayed"
    print(counts, file=out)
    rates = ", ".join(
        f"pass^{k} {'-' if value is None else f'{value:.3f}'}"
        for k, value in summary.pass_hat_k.items()
    )
    print(f"{summary.cases} case(s) x {args.repeat}: {rates}", file=out)
    if args.out is not None:
        ReplayFile(
            target=_without_credentials(args.target),
            release=args.release,
            model=args.model,
            started_at=started,
            finished_at=datetime.now(UTC),
            repeat=args.repeat,
            simulator=info,
            turnwatch_version=__version__,
            runs=runs,
        ).save(args.out)
        print(f"wrote {len(runs)} run(s) to {args.out}", file=err)
    return 1 if summary.failed or summary.error else 0


def _progress(err: TextIO):
    tty = err.isatty()

    def progress(done: int, total: int, run: ReplayRun) -> None:
        width = 30
        bar = "#" * (width * done // total)
        verdict = run.outcome.value
        line = f"replay [{bar:<{width}}] {done}/{total} {run.case_id} {verdict}"
        # A terminal gets one updating line; a log file gets one line per run.
        print(f"\r{line}" if tty else line, end="" if tty and done < total else "\n", file=err)

    return progress


def _without_credentials(url: str) -> str:
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))
