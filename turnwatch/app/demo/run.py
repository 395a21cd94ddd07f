"""`turnwatch demo`: turnwatch on embedded defaults, a simulated chatbot, and a summary.

The whole pipeline runs in this process (`BackgroundService`): OTLP receivers, sessionizer,
Presidio de-identification, scorers with the built-in heuristic judge, and the exporters writing
regression cases. The simulated chatbot sends real OTLP over loopback; no network, no API key.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import signal
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib.resources import files
from pathlib import Path
from typing import TextIO

from turnwatch.app.collector_role import build_collector
from turnwatch.app.context import ServiceContext
from turnwatch.app.demo.chatbot import MODEL, SERVICE_NAME, SimulatedChatbot
from turnwatch.app.demo.observer import ScoreObserver
from turnwatch.app.demo.progress import Progress
from turnwatch.app.demo.scripts import SCRIPTS, Script
from turnwatch.app.demo.summary import ConversationResult, DemoReport, render
from turnwatch.app.roles import Roles, build_exporter, build_scorer
from turnwatch.app.serve import BackgroundService, Service
from turnwatch.app.settings import Settings, load_settings
from turnwatch.collector.deid.secret import load_secret, session_id_key
from turnwatch.collector.session_keys import session_id_for
from turnwatch.exporters.regressions.store import CaseStore, regressions_dir

log = logging.getLogger("turnwatch.demo")

CONTRACTS = "contracts"
START_TIMEOUT_SECONDS = 120.0
"""Loading Presidio and spaCy takes seconds, more on a busy machine."""
DRAIN_TIMEOUT_SECONDS = 15.0
POLL_SECONDS = 0.25
# A made-up price for the simulated model, so the cost budget is scored rather than unscored.
DEMO_PRICE = {MODEL: {"input_per_million_usd": 0.15, "output_per_million_usd": 0.60}}


@dataclass(frozen=True, slots=True)
class DemoOptions:
    data_dir: Path
    otlp_port: int
    grpc_port: int
    ops_port: int
    keep_serving: bool
    timeout_seconds: float


def contracts_dir() -> Path:
    """The demo contract ships as package data next to this module."""
    return Path(str(files("turnwatch.app.demo") / CONTRACTS))


def demo_settings(options: DemoOptions) -> Settings:
    return load_settings(
        None,
        {
            "data_dir": options.data_dir,
            "otlp.http_port": options.otlp_port,
            "otlp.grpc_port": options.grpc_port,
            "ops.port": options.ops_port,
            # End markers close each conversation at once; the idle timeout is the fallback.
            "sessions.idle_timeout_seconds": 3.0,
            "sessions.sweep_interval_seconds": 0.2,
            "scorers.contracts_dir": contracts_dir(),
            "scorers.prices": DEMO_PRICE,
        },
    )


def _loopback(host: str) -> str:
    return "127.0.0.1" if host in ("", "0.0.0.0", "::") else host


class DemoRun:
    def __init__(self, options: DemoOptions, settings: Settings, progress: Progress) -> None:
        self.options = options
        self.settings = settings
        self.progress = progress
        self.observer = ScoreObserver()
        # A fresh conversation id per run: a reused data dir must not mistake this run's
        # sessions for redeliveries of the last one's.
        run_id = secrets.token_hex(4)
        self.conversations = {script.name: f"demo-{run_id}-{script.name}" for script in SCRIPTS}
        id_key = session_id_key(load_secret(settings.deid, settings.mode, settings.data_dir))
        self.session_ids = {
            script.name: session_id_for(SERVICE_NAME, self.conversations[script.name], id_key)
            for script in SCRIPTS
        }

    def run(self, out: TextIO) -> int:
        self.progress.note("starting turnwatch (loading the de-identification model)")
        background = BackgroundService(self.settings, self._compose)
        try:
            service = background.start(timeout=START_TIMEOUT_SECONDS)
        except RuntimeError as exc:
            hint = ""
            if "in use" in str(exc):
                hint = "; --otlp-port 0 --grpc-port 0 --ops-port 0 picks free ports"
            self.progress.note(f"cannot start: {exc}{hint}")
            # A start that failed has closed its loop already; one that timed out is stopped.
            with contextlib.suppress(RuntimeError):
                background.stop()
            return 1
        try:
            return self._drive(service, out)
        finally:
            self.progress.note("stopping turnwatch")
            background.stop()

    def _compose(self, context: ServiceContext) -> Roles:
        """All roles, as `turnwatch serve` runs them, with the observer tapping the exporter."""
        return Roles(
            collector=build_collector(context),
            consumers=[build_scorer(context), build_exporter(context, tap=self.observer)],
        )

    def _drive(self, service: Service, out: TextIO) -> int:
        host = _loopback(self.settings.otlp.host)
        ops_url = f"http://{_loopback(self.settings.ops.host)}:{service.ports.ops}"
        self.progress.note(
            f"turnwatch is up: OTLP/HTTP {host}:{service.ports.otlp_http}, "
            f"OTLP/gRPC {host}:{service.ports.otlp_grpc}, ops {ops_url}"
        )
        started_at = datetime.now(UTC)
        clock = time.monotonic()
        missing = self._send_all(f"http://{host}:{service.ports.otlp_http}")
        self._wait_for_bus(service)
        report = self._report(started_at, time.monotonic() - clock, ops_url)
        log.info("demo finished", extra=report.counts())
        self.progress.done()
        out.write(render(report))
        out.flush()
        if self.options.keep_serving:
            self._serve_until_interrupted(service, ops_url)
        return 0 if report.ok and not missing else 1

    def _send_all(self, otlp_url: str) -> set[str]:
        """Play every script, wave by wave; return the sessions not scored in time."""
        bot = SimulatedChatbot(otlp_url)
        missing: set[str] = set()
        try:
            for wave in sorted({script.wave for script in SCRIPTS}):
                scripts = [script for script in SCRIPTS if script.wave == wave]
                missing |= self._send_wave(bot, scripts)
        finally:
            bot.close()
        return missing

    def _send_wave(self, bot: SimulatedChatbot, scripts: list[Script]) -> set[str]:
        for script in scripts:
            bot.converse(script, self.conversations[script.name])
            self.progress.sent(script.name)
            self._show_scored()
        wanted = {self.session_ids[script.name] for script in scripts}
        deadline = time.monotonic() + self.options.timeout_seconds
        while time.monotonic() < deadline:
            left = self.observer.wait_for_scores(wanted, POLL_SECONDS)
            self._show_scored()
            if not left:
                return set()
        missing = self.observer.wait_for_scores(wanted, 0)
        names = sorted(name for name, sid in self.session_ids.items() if sid in missing)
        self.progress.note(f"not scored within {self.options.timeout_seconds:.0f} s: {names}")
        return missing

    def _show_scored(self) -> None:
        self.progress.scored(self.observer.scored_count(set(self.session_ids.values())))

    def _wait_for_bus(self, service: Service) -> None:
        """Incidents follow their score on the bus: let the exporter finish writing cases."""
        loop, bus = self.observer.loop, service.bus
        if loop is None or bus is None:
            return
        idle = asyncio.run_coroutine_threadsafe(bus.idle(DRAIN_TIMEOUT_SECONDS), loop)
        if not idle.result(DRAIN_TIMEOUT_SECONDS + 5):
            self.progress.note("the bus did not drain; the summary may miss incidents")

    def _report(self, started_at: datetime, elapsed: float, ops_url: str) -> DemoReport:
        scores = self.observer.scores()
        incidents = self.observer.incidents()
        ours = set(self.session_ids.values())
        results = [
            ConversationResult(
                script,
                scores.get(self.session_ids[script.name]),
                self.session_ids[script.name] in incidents,
                self.session_ids[script.name],
            )
            for script in SCRIPTS
        ]
        store = CaseStore(regressions_dir(self.settings.data_dir), self.settings.regressions)
        cases = [case for case in store.summaries() if case.last_seen >= started_at]
        return DemoReport(
            results=results,
            cases=cases,
            started_at=started_at,
            elapsed_seconds=elapsed,
            data_dir=self.options.data_dir,
            ops_url=ops_url,
            serving=self.options.keep_serving,
            incidents=len(ours & incidents.keys()),
        )

    def _serve_until_interrupted(self, service: Service, ops_url: str) -> None:
        host = _loopback(self.settings.otlp.host)
        self.progress.note(
            f"still serving. Open the web view: {ops_url}/ui/ (failed sessions first; click "
            f"one for its transcript and findings). Also {ops_url}/metrics, "
            f"{ops_url}/api/incidents, OTLP on http://{host}:{service.ports.otlp_http}; "
            "Ctrl-C stops"
        )
        stop = threading.Event()
        # Both signals set the event (SIGINT too: a shell may start background jobs with it
        # ignored, and a handler of our own also avoids a KeyboardInterrupt mid-shutdown).
        previous = {
            signum: signal.signal(signum, lambda *_: stop.set())
            for signum in (signal.SIGINT, signal.SIGTERM)
        }
        try:
            while not stop.wait(1.0):
                pass
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)


def run_demo_with(options: DemoOptions, out: TextIO, err: TextIO) -> int:
    settings = demo_settings(options)
    return DemoRun(options, settings, Progress(err, total=len(SCRIPTS))).run(out)
