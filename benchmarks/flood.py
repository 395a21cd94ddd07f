"""Flood: conversations that each bring a new id and a new `service.name`, against /metrics.

The real OTLP/HTTP receiver, sessionizer and sampler (this process runs the collector, so the
RSS below is the server's); each closed session becomes a score record for the exporter on the
same registry (scorer and bus stood in for, see tests/flood.py). First `--max-services` real
services send `exporter.service_min_sessions` sessions each, so every `service` label slot is
taken (the most series the labels allow); then the flood. At each checkpoint it prints the
series on /metrics, the distinct `service` label values and the process's RSS; the first row is
the idle server. The ratio column divides by the series after 1,000 flood conversations, the
same run's baseline: bounded labels show as a ratio that stays 1.00. No id repeats, so nothing
is a cache hit. RSS is reported, not asserted.

    python benchmarks/flood.py [--conversations 100000] [--max-services 20]

With `--serve N` it also floods a real `turnwatch serve` subprocess (de-identification, the
real scorers and their checks and judge metrics, the exporter) with N conversations after the
same real services, and prints the series there: what a deployment's /metrics holds, larger
per service than the stand-in records give.

    python benchmarks/flood.py --conversations 0 --serve 2000
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402
from turnwatch.exporters.config import ExporterConfig  # noqa: E402
from turnwatch.exporters.score_exporter import ScoreExporter  # noqa: E402

from benchmarks.soak import rss_mib  # noqa: E402
from tests.conftest import make_settings, settled  # noqa: E402
from tests.flood import ExportingSink, flood_request, series, service_values  # noqa: E402
from tests.otlp_requests import PROTOBUF  # noqa: E402
from tests.serve_process import ServeProcess  # noqa: E402
from tests.stages import collector_into  # noqa: E402
from turnwatch.app.serve import BackgroundService  # noqa: E402

PER_REQUEST = 1_000


def checkpoints(total: int) -> list[int]:
    points = [n for n in (1_000, 10_000, 100_000, 1_000_000) if n < total]
    return [*points, total]


def post_all(
    client: httpx.Client, base: str, start: int, stop: int, service: str | None = None
) -> int:
    """Post conversations [start, stop); returns how many 503s asked the client to come back."""
    retries = 0
    for first in range(start, stop, PER_REQUEST):
        body = flood_request(first, min(PER_REQUEST, stop - first), service)
        while True:
            answer = client.post(
                f"{base}/v1/traces", content=body, headers={"Content-Type": PROTOBUF}
            )
            if answer.status_code != 503:
                break
            retries += 1
            time.sleep(0.05)  # overloaded: the receiver asked us to come back later
        assert answer.status_code == 200, answer.text
    return retries


def post_real_services(client: httpx.Client, base: str, services: int, sessions: int) -> int:
    """`sessions` conversations for each of `services` services, so they take every slot."""
    retries = 0
    for number in range(services):
        first = -(number + 1) * sessions  # negative numbers: ids the flood never reuses
        retries += post_all(client, base, first, first + sessions, f"real-svc-{number}")
    return retries


def scored(text: str) -> float:
    return sum(s.value for s in series(text) if s.name == "turnwatch_sessions_scored_total")


def serve_flood(conversations: int, max_services: int) -> None:
    """Series on a real `turnwatch serve`'s /metrics after the real services and the flood."""
    settings = {
        "sessions.idle_timeout_seconds": 0.5,
        "sessions.sweep_interval_seconds": 0.1,
        "exporter.max_services": max_services,
        "log.level": "WARNING",
    }
    sessions = ExporterConfig().service_min_sessions
    rows = []
    with tempfile.TemporaryDirectory(prefix="turnwatch-flood-") as workdir:
        server = ServeProcess(Path(workdir), settings)
        try:
            with httpx.Client(timeout=60) as client:
                expected = max_services * sessions
                post_real_services(client, server.otlp_url, max_services, sessions)
                for label, flood in (("real services", 0), ("flood", conversations)):
                    post_all(client, server.otlp_url, 0, flood)
                    expected += flood
                    deadline = time.monotonic() + 1800
                    while time.monotonic() < deadline:
                        text = client.get(f"{server.ops_url}/metrics").text
                        if scored(text) >= expected:
                            break
                        time.sleep(1)
                    rows.append((label, scored(text), len(series(text)), service_values(text)))
        finally:
            server.stop()
    print("\n`turnwatch serve`, real scorers:\n")
    print("| after | sessions scored | series on /metrics | `service` values |")
    print("|---|---|---|---|")
    for label, count, total, services in rows:
        print(f"| {label} | {count:,.0f} | {total:,} | {len(services)} |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=100_000)
    parser.add_argument("--max-services", type=int, default=20)
    parser.add_argument("--serve", type=int, default=0, help="flood conversations for serve")
    args = parser.parse_args()
    if args.serve:
        serve_flood(args.serve, args.max_services)
    if not args.conversations:
        return 0

    settings = make_settings(
        **{
            "sessions.idle_timeout_seconds": 0.2,
            "otlp.grpc_enabled": False,
            # Evictions close sessions in bursts; a deep queue keeps drops (counted) rare.
            "handoff.queue_size": 20_000,
        }
    )
    sink = ExportingSink()
    background = BackgroundService(settings, collector_into(sink))
    service = background.start()
    config = ExporterConfig(max_services=args.max_services)
    sink.exporter = ScoreExporter(service.registry, config)
    base = f"http://127.0.0.1:{service.ports.otlp_http}"
    ops = f"http://127.0.0.1:{service.ports.ops}"
    rows = []
    try:
        text = httpx.get(f"{ops}/metrics").text
        rows.append((0, 0, 0, len(series(text)), len(service_values(text)), rss_mib(os.getpid())))
        sent = retries = 0
        cpu_started = time.process_time()
        with httpx.Client(timeout=60) as client:
            real = config.service_min_sessions
            retries += post_real_services(client, base, args.max_services, real)
            settled(ops, timeout=60)
            text = httpx.get(f"{ops}/metrics").text
            rows.append(
                (
                    "real",
                    args.max_services * real,
                    0,
                    len(series(text)),
                    len(service_values(text)),
                    rss_mib(os.getpid()),
                )
            )
            for point in checkpoints(args.conversations):
                retries += post_all(client, base, sent, point)
                sent = point
                counts = settled(ops, timeout=300)
                text = httpx.get(f"{ops}/metrics").text
                rows.append(
                    (
                        sent,
                        int(counts.delivered),
                        int(counts.dropped),
                        len(series(text)),
                        len(service_values(text)),
                        rss_mib(os.getpid()),
                    )
                )
        cpu = time.process_time() - cpu_started
        leaked = "flood-conv-" in text
    finally:
        background.stop()

    print(
        "| flood conversations sent | exported | dropped (counted) | series on /metrics "
        "| series / at 1,000 | `service` values | RSS MiB |"
    )
    print("|---|---|---|---|---|---|---|")
    # The baseline is the page once every label limit has filled: growth past it is a leak.
    baseline = rows[2][3]
    for sent, exported, dropped, count, services, rss in rows:
        label = (
            f"0 (after {args.max_services} services x {config.service_min_sessions} sessions)"
            if sent == "real"
            else f"{sent:,}"
        )
        print(
            f"| {label} | {exported:,} | {dropped:,} | {count:,} | {count / baseline:.2f} "
            f"| {services} | {rss:.1f} |"
        )
    print(
        f"\nprocess CPU {cpu:.1f} s for {sent:,} conversations; {retries} requests refused with "
        f"503 and sent again; a conversation id on /metrics: {'yes' if leaked else 'no'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
