"""The `demo` sub-command for turnwatch/app/cli.py: `add_demo_parser(commands)`, `run_demo(args)`.

Exit codes: 0 every conversation scored as the demo expects, 1 a conversation was not scored in
time or an expected finding is missing (or turnwatch could not start), 2 usage error.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

COMMAND = "demo"
DEFAULT_DATA_DIR = Path("turnwatch-demo")
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")


def add_demo_parser(subparsers: Any) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        COMMAND,
        help="run turnwatch with a simulated support chatbot and print what it finds",
        description="Start turnwatch on embedded defaults, play healthy and failing support "
        "conversations through a simulated chatbot emitting real OTel GenAI spans, and print a "
        "summary. No network, no API key.",
    )
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=DEFAULT_DATA_DIR,
        help=f"state directory: pseudonym key, regression cases (default ./{DEFAULT_DATA_DIR})",
    )
    parser.add_argument("--otlp-port", type=int, default=4318, help="OTLP/HTTP port (0 = any)")
    parser.add_argument("--grpc-port", type=int, default=4317, help="OTLP/gRPC port (0 = any)")
    parser.add_argument("--ops-port", type=int, default=9464, help="ops port (0 = any)")
    parser.add_argument(
        "--keep-serving",
        action="store_true",
        help="after the summary, keep serving (metrics, incidents API, OTLP) until Ctrl-C",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=60.0,
        help="seconds to wait for the sessions of each wave to be scored (default 60)",
    )
    parser.add_argument(
        "--log-level",
        choices=LOG_LEVELS,
        default="WARNING",
        help="turnwatch's own JSON logs on stderr (default WARNING: only problems)",
    )
    return parser


def run_demo(args: argparse.Namespace) -> int:
    for flag in ("otlp_port", "grpc_port", "ops_port"):
        port = getattr(args, flag)
        if not 0 <= port <= 65535:
            print(f"turnwatch demo: --{flag.replace('_', '-')} {port}: not a port", file=sys.stderr)
            return 2
    from turnwatch.app.demo.run import DemoOptions, run_demo_with
    from turnwatch.app.settings import ConfigError
    from turnwatch.logs import configure_logging

    configure_logging(args.log_level)
    options = DemoOptions(
        data_dir=args.data_dir,
        otlp_port=args.otlp_port,
        grpc_port=args.grpc_port,
        ops_port=args.ops_port,
        keep_serving=args.keep_serving,
        timeout_seconds=args.timeout,
    )
    try:
        return run_demo_with(options, sys.stdout, sys.stderr)
    except ConfigError as exc:
        print(f"turnwatch demo: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("turnwatch demo: interrupted", file=sys.stderr)
        return 130
