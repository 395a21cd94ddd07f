"""turnwatch watches a chatbot in production: it receives the OpenTelemetry spans the chatbot's
instrumentation already sends (OTLP on 4318 HTTP and 4317 gRPC), rebuilds each conversation,
de-identifies it, scores it with deterministic checks and judge metrics, and exports Prometheus
metrics (ops port 9464, /metrics) and regression cases."""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from turnwatch import __version__, collector
from turnwatch.app.calibrate import add_calibrate_parser, run_calibrate
from turnwatch.app.demo.cli import add_demo_parser, run_demo
from turnwatch.app.gate import add_gate_parser, run_gate
from turnwatch.app.regressions import add_regressions_parser, run_regressions
from turnwatch.app.sessions import add_sessions_parser, run_sessions
from turnwatch.app.settings import ConfigError, Settings, load_settings
from turnwatch.logs import configure_logging
from turnwatch.scorers.registry import ContractError

EPILOG = """\
start here:
  turnwatch demo                  serve plus a simulated chatbot; prints where to look
  turnwatch serve                 point OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 at it
  turnwatch COMMAND --help        the options of one command
"""

if TYPE_CHECKING:
    from turnwatch.app.roles import Role
    from turnwatch.app.serve import Service

EXIT_DROPPED_AT_SHUTDOWN = 3
"""`turnwatch serve` stopped, but dropped accepted sessions or bus records on the way out."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="turnwatch",
        description=__doc__,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--version", action="version", version=f"turnwatch {__version__} ({collector.BUILD})"
    )
    commands = parser.add_subparsers(dest="command", required=True)
    add_regressions_parser(commands)
    add_sessions_parser(commands)
    add_calibrate_parser(commands)
    add_demo_parser(commands)
    add_gate_parser(commands)
    serve = commands.add_parser("serve", help="run turnwatch (all roles in one process)")
    serve.add_argument("--config", type=Path, help="YAML configuration file")
    serve.add_argument(
        "--role",
        choices=["all", "collector", "sessionizer", "scorer", "exporter"],
        default="all",
        help="run one role only (needs Kafka: --kafka or TURNWATCH_KAFKA_BOOTSTRAP)",
    )
    serve.add_argument(
        "--kafka",
        metavar="BOOTSTRAP",
        help="Kafka bootstrap servers host:port[,...] (default: TURNWATCH_KAFKA_BOOTSTRAP, "
        "then bus.kafka.bootstrap; none = embedded bus)",
    )
    serve.add_argument("--otlp-port", type=int, help="OTLP/HTTP port (default 4318; 0 = any)")
    serve.add_argument("--grpc-port", type=int, help="OTLP/gRPC port (default 4317; 0 = any)")
    serve.add_argument("--ops-port", type=int, help="ops port (default 9464; 0 = any)")
    serve.add_argument("--host", help="address the OTLP receivers bind to")
    serve.add_argument(
        "--session-idle-timeout", type=float, help="seconds of silence that close a session"
    )
    serve.add_argument("--sampling-rate", type=float, help="fraction of sessions sampled")
    serve.add_argument(
        "--data-dir", type=Path, help="state directory (generated pseudonym key, quarantine)"
    )
    return parser


def _overrides(args: argparse.Namespace) -> dict[str, object]:
    flags = {
        "otlp.http_port": args.otlp_port,
        "otlp.grpc_port": args.grpc_port,
        "ops.port": args.ops_port,
        "otlp.host": args.host,
        "sessions.idle_timeout_seconds": args.session_idle_timeout,
        "sampling.rate": args.sampling_rate,
        "data_dir": args.data_dir,
    }
    return {key: value for key, value in flags.items() if value is not None}


def _run_serve(args: argparse.Namespace) -> int:
    try:
        settings = _with_kafka(load_settings(args.config, _overrides(args)), args.kafka)
    except ConfigError as exc:
        print(f"turnwatch: {exc}", file=sys.stderr)
        return 2
    if args.role != "all" and not settings.bus.kafka.bootstrap:
        print(
            f"turnwatch: --role {args.role} needs Kafka: pass --kafka BOOTSTRAP or set "
            "TURNWATCH_KAFKA_BOOTSTRAP (or run `turnwatch serve`: all roles, embedded bus)",
            file=sys.stderr,
        )
        return 2
    if settings.routing.mode == "route" and not settings.bus.kafka.bootstrap:
        print(
            "turnwatch: routing.mode: route needs Kafka: pass --kafka BOOTSTRAP or set "
            "TURNWATCH_KAFKA_BOOTSTRAP (the sessionizer role reads what the collector routes)",
            file=sys.stderr,
        )
        return 2
    configure_logging(settings.log.level)
    return _serve_until_signalled(settings, args.role)


def _with_kafka(settings: Settings, flag: str | None) -> Settings:
    """--kafka, then the short variable the docs name (it beats TURNWATCH_BUS__KAFKA__BOOTSTRAP)."""
    bootstrap = flag or os.environ.get("TURNWATCH_KAFKA_BOOTSTRAP")
    if not bootstrap:
        return settings
    kafka = settings.bus.kafka.model_copy(update={"bootstrap": bootstrap})
    return settings.model_copy(update={"bus": settings.bus.model_copy(update={"kafka": kafka})})


def _announcer(settings: Settings, role: str) -> Callable[[Service], None]:
    def announce(service: Service) -> None:
        ports = service.ports
        ops = f"ops http://{settings.ops.host}:{ports.ops}/metrics"
        if role in ("sessionizer", "scorer", "exporter"):
            print(f"turnwatch {__version__} ({role}): {ops}", flush=True)
            return
        print(
            f"turnwatch {__version__}: OTLP/HTTP {settings.otlp.host}:{ports.otlp_http}, "
            f"OTLP/gRPC {settings.otlp.host}:{ports.otlp_grpc or 'off'}, {ops}",
            flush=True,
        )

    return announce


def _serve_until_signalled(settings: Settings, role: Role) -> int:
    """Run `serve` until SIGINT or SIGTERM; a start-up failure is a message, not a traceback."""
    from turnwatch.app.exposure import ExposureError
    from turnwatch.app.serve import serve
    from turnwatch.bus.plugins import PluginError
    from turnwatch.bus.spool import SpoolLocked
    from turnwatch.collector.deid.engine import ModelMissingError
    from turnwatch.collector.deid.secret import SecretError
    from turnwatch.collector.wal.segments import WalLocked

    async def main() -> int:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop.set)
        return await serve(settings, stop, on_started=_announcer(settings, role), role=role)

    # Whatever a stage writes (spool, write-ahead log, quarantine, cases) is created owner-only,
    # even by code that does not ask for a mode.
    os.umask(0o077)
    try:
        dropped = asyncio.run(main())
    except (SpoolLocked, WalLocked) as exc:
        print(f"turnwatch: cannot start: {exc} is used by another process", file=sys.stderr)
        return 2
    except (
        SecretError,
        ModelMissingError,
        PluginError,
        ContractError,
        ConfigError,
        ExposureError,
    ) as exc:
        print(f"turnwatch: cannot start: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"turnwatch: cannot start: {exc.strerror or exc}", file=sys.stderr)
        return 1
    if dropped:
        # An orchestrator sees the loss in the exit status, not only in metrics nobody scrapes.
        message = f"turnwatch: {dropped} accepted sessions or bus records dropped at shutdown"
        print(message, file=sys.stderr)
        return EXIT_DROPPED_AT_SHUTDOWN
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "serve":
        return _run_serve(args)
    if args.command == "regressions":
        return run_regressions(args)
    if args.command == "sessions":
        return run_sessions(args)
    if args.command == "calibrate":
        return run_calibrate(args)
    if args.command == "demo":
        return run_demo(args)
    if args.command == "gate":
        return run_gate(args)
    return 2


if __name__ == "__main__":
    sys.exit(main())
