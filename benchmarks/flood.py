"""Flood: conversations that each bring a new id and a new `service.name`, against /metrics.

The real OTLP/HTTP receiver, sessionizer and sampler (this process runs the collector, so the
RSS below is the server's); each closed session becomes a score record for the exporter on the
same registry (scorer and bus stood in for, see tests/flood.py). At each checkpoint it prints the
series on /metrics, the distinct `service` label values and the process's RSS; the first row is
the idle server. The ratio column divides by the series after 1,000 conversations, the same run's
baseline: by then the first `--max-services` services have their names and every label set is
full, so bounded labels show as a ratio that stays 1.00. No id repeats, so nothing is a cache
hit. RSS is reported, not asserted.

    python benchmarks/flood.py [--conversations 100000] [--max-services 20]
"""

from __future__ import annotations

import argparse
import os
import sys
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
from tests.stages import collector_into  # noqa: E402
from turnwatch.app.serve import BackgroundService  # noqa: E402

PER_REQUEST = 1_000


def checkpoints(total: int) -> list[int]:
    points = [n for n in (1_000, 10_000, 100_000, 1_000_000) if n < total]
    return [*points, total]


def post_all(client: httpx.Client, base: str, start: int, stop: int) -> int:
    """Post conversations [start, stop); returns how many 503s asked the client to come back."""
    retries = 0
    for first in range(start, stop, PER_REQUEST):
        body = flood_request(first, min(PER_REQUEST, stop - first))
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=100_000)
    parser.add_argument("--max-services", type=int, default=20)
    args = parser.parse_args()

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
    sink.exporter = ScoreExporter(service.registry, ExporterConfig(max_services=args.max_services))
    base = f"http://127.0.0.1:{service.ports.otlp_http}"
    ops = f"http://127.0.0.1:{service.ports.ops}"
    rows = []
    try:
        text = httpx.get(f"{ops}/metrics").text
        rows.append((0, 0, 0, len(series(text)), len(service_values(text)), rss_mib(os.getpid())))
        sent = retries = 0
        cpu_started = time.process_time()
        with httpx.Client(timeout=60) as client:
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
        "| conversations sent | exported | dropped (counted) | series on /metrics "
        "| series / at 1,000 | `service` values | RSS MiB |"
    )
    print("|---|---|---|---|---|---|---|")
    # The baseline is the page once every label limit has filled: growth past it is a leak.
    baseline = rows[1][3]
    for sent, exported, dropped, count, services, rss in rows:
        print(
            f"| {sent:,} | {exported:,} | {dropped:,} | {count:,} | {count / baseline:.2f} "
            f"| {services} | {rss:.1f} |"
        )
    print(
        f"\nprocess CPU {cpu:.1f} s for {sent:,} conversations; {retries} requests refused with "
        f"503 and sent again; a conversation id on /metrics: {'yes' if leaked else 'no'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
