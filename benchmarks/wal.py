"""Write-ahead log: what durable acceptance costs the collector, per fsync policy.

The ingest benchmark's server and load (benchmarks/otlp_load.py and ingest.py: the collector
stage in a subprocess, protobuf requests of 512 GenAI chat spans, about 1 KB of text each,
sessions assembled at sampling rate 1.0), run with the log off and with `wal.fsync` `never`,
`batch` and `always`, each on a fresh server and data directory. Rounds rotate the order of the
four, every run posts requests no other run posted, and the ratio column divides by the log-off
run of the same round. Also per run: p50 / p99 response time (the 200 waits for the policy's
fsync), fsyncs per request and bytes written to the log per span.

Then the log alone, in this process (less noise than a server's CPU on a shared machine): CPU per
request to encrypt, write and (per policy) fsync the same request bodies, four writers at a time,
and per session the claim and done mark the pipeline adds; the process's CPU includes the fsync
thread's.

    python benchmarks/wal.py [--requests 60] [--rounds 3] [--clients 4]
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from prometheus_client import CollectorRegistry  # noqa: E402
from turnwatch.collector.sessionizer import OpenSession  # noqa: E402
from turnwatch.collector.wal.config import WalConfig  # noqa: E402
from turnwatch.collector.wal.durability import Durability  # noqa: E402
from turnwatch.collector.wal.metrics import WalMetrics  # noqa: E402
from turnwatch.collector.wal.segments import Kind  # noqa: E402

from benchmarks.ingest import run_turnwatch  # noqa: E402
from benchmarks.otlp_load import SPANS_PER_REQUEST, Load, TurnwatchServer  # noqa: E402
from turnwatch import collector  # noqa: E402

POLICIES = ("off", "never", "batch", "always")


def wal_overrides(policy: str, data_dir: str) -> dict[str, object]:
    overrides: dict[str, object] = {
        "data_dir": data_dir,
        "sessions.idle_timeout_seconds": 30,
        "handoff.queue_size": 100_000,
        "sampling.rate": 1.0,
    }
    if policy != "off":
        overrides |= {"wal.enabled": True, "wal.fsync": policy}
    return overrides


def measure(policy: str, requests: int, clients: int, seed: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="turnwatch-wal-bench-") as data_dir:
        server = TurnwatchServer(wal_overrides(policy, data_dir))
        load = Load(f"{policy}-{seed}", seed)
        try:
            run_turnwatch(server, load.requests(8), clients, None)  # warm-up
            fsyncs_before = server.metric("turnwatch_wal_fsync_duration_seconds_count")
            bytes_before = server.metric("turnwatch_wal_appended_bytes_total")
            row = run_turnwatch(server, load.requests(requests), clients, None)
            fsyncs = server.metric("turnwatch_wal_fsync_duration_seconds_count") - fsyncs_before
            written = server.metric("turnwatch_wal_appended_bytes_total") - bytes_before
        finally:
            server.stop()
    row["fsyncs_per_request"] = fsyncs / requests
    row["wal_bytes_per_span"] = written / (requests * SPANS_PER_REQUEST)
    return row


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)  # every thread of this process
    return usage.ru_utime + usage.ru_stime


async def log_alone(policy: str, bodies: list[bytes], sessions: int) -> tuple[float, float]:
    """CPU ms per request written and made durable, and us per session claimed and released."""
    with tempfile.TemporaryDirectory(prefix="turnwatch-wal-bench-") as directory:
        config = WalConfig(enabled=True, fsync=policy)
        wal = Durability(
            config,
            Path(directory),
            b"bench secret 32 bytes long......",
            WalMetrics(CollectorRegistry()),
        )
        wal.start()
        waiting = list(bodies)

        async def writer() -> None:
            while waiting:
                await wal.durable(wal.append(Kind.TRACES_PROTOBUF, waiting.pop()))

        started = cpu_seconds()
        await asyncio.gather(*(writer() for _ in range(4)))
        per_request = (cpu_seconds() - started) / len(bodies)
        started = cpu_seconds()
        for number in range(sessions):
            state = OpenSession(f"bench-{number}", "attribute", 0.0, 0.0, revision=1)
            state.sources = {1 + number % len(bodies): [number % 512, number % 512]}
            claim = wal.claim(state)
            assert claim is not None
            claim.release()
        per_session = (cpu_seconds() - started) / sessions
        await wal.close()
    return 1000 * per_request, 1e6 * per_session


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=60)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--clients", type=int, default=4)
    args = parser.parse_args()

    print(
        f"write-ahead log: {args.requests} requests x {SPANS_PER_REQUEST} spans per run, "
        f"{args.clients} client threads, {args.rounds} rounds, {collector.BUILD}"
    )
    print(
        f"{'round':>5} {'policy':<8}{'spans/CPU-s':>12}{'vs off':>8}{'p50 ms':>8}{'p99 ms':>8}"
        f"{'fsyncs/req':>11}{'log B/span':>11}"
    )
    ratios: dict[str, list[float]] = {policy: [] for policy in POLICIES}
    seed = 100
    for number in range(args.rounds):
        order = POLICIES[number % len(POLICIES) :] + POLICIES[: number % len(POLICIES)]
        rows = {}
        for policy in order:
            seed += 10
            rows[policy] = measure(policy, args.requests, args.clients, seed)
        for policy in POLICIES:
            row = rows[policy]
            ratio = row["spans_per_cpu_s"] / rows["off"]["spans_per_cpu_s"]
            ratios[policy].append(ratio)
            print(
                f"{number + 1:>5} {policy:<8}{row['spans_per_cpu_s']:>12.0f}{ratio:>8.2f}"
                f"{row['p50_ms']:>8.1f}{row['p99_ms']:>8.1f}{row['fsyncs_per_request']:>11.2f}"
                f"{row['wal_bytes_per_span']:>11.0f}"
            )
    print("median spans/CPU-s ratio to the log off, same round:")
    for policy in POLICIES[1:]:
        values = ratios[policy]
        print(f"  {policy:<8}{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})")

    bodies = Load("alone", seed + 1000).requests(40)
    print(f"the log alone: {len(bodies)} requests of {SPANS_PER_REQUEST} spans, best of 3")
    print(f"{'policy':<8}{'CPU ms/request':>15}{'us/span':>9}{'claim+mark us/session':>23}")
    for policy in POLICIES[1:]:
        runs = [asyncio.run(log_alone(policy, bodies, 5_000)) for _ in range(3)]
        per_request = min(run[0] for run in runs)
        per_session = min(run[1] for run in runs)
        print(
            f"{policy:<8}{per_request:>15.2f}{1000 * per_request / SPANS_PER_REQUEST:>9.2f}"
            f"{per_session:>23.1f}"
        )


if __name__ == "__main__":
    main()
