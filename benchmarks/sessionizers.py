"""End-to-end sessions per second of the distributed layout with 1, 2 and 3 sessionizer members.

Each configuration gets a fresh Tansu broker, one routing collector (in this process) and N
`turnwatch serve --role sessionizer` processes (real Presidio, one de-identification thread
each), with `turnwatch.observations` split into 6 partitions so every N in 1..3 divides them
evenly. A warm-up of corpus conversations runs until every member has published a session (the
group has settled and Presidio is warm); then the measured conversations, which no other
configuration of the run has seen, are posted and timed until every one of their sessions is on
`turnwatch.sessions` and the group has committed every observation. The time includes one idle
timeout (`sessions.idle_timeout_seconds`, 1 s), after which the last sessions close.

Prints sessions per second (wall clock) and per CPU-second of the member processes (user +
system time from /proc), each with its ratio to one member in the same round. Rounds alternate
the order of the configurations. On a machine with fewer cores than members plus the broker and
the collector, the members share cores: the wall-clock ratio shows what the machine allows, the
per-CPU-second figure what a member costs.

    python benchmarks/sessionizers.py [--conversations 60] [--rounds 1]
"""

from __future__ import annotations

import argparse
import functools
import itertools
import os
import sys
import time
from pathlib import Path
from tempfile import TemporaryDirectory

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.kafka_broker import TansuBroker, topic_size, uncommitted, with_bus  # noqa: E402
from tests.serve_process import ServeProcess  # noqa: E402
from tests.test_distributed import FAST_GROUP, SECRET, Spans, post, settings_for  # noqa: E402
from tests.waiting import eventually  # noqa: E402
from turnwatch.app.roles import build_roles  # noqa: E402
from turnwatch.app.serve import BackgroundService  # noqa: E402
from turnwatch.bus.records import OBSERVATIONS, SESSIONS  # noqa: E402

PARTITIONS = 6
IDLE_SECONDS = 1.0
WARM_UP = 18
GROUP = dict(FAST_GROUP, **{"kafka.partitions": PARTITIONS})


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def member(bootstrap: str, workdir: Path) -> ServeProcess:
    settings = {
        "deid.secret": SECRET,
        "deid.workers": 1,
        "sessions.end_marker_attributes": {},
        "sessions.idle_timeout_seconds": IDLE_SECONDS,
        "sessions.sweep_interval_seconds": 0.1,
        "bus.kafka.bootstrap": bootstrap,
        **{f"bus.{key}": value for key, value in GROUP.items()},
    }
    return ServeProcess(workdir, settings, role="sessionizer")


def published(members: list[ServeProcess]) -> float:
    return sum(m.metric("turnwatch_bus_records_produced_total", topic=SESSIONS) for m in members)


def measure(count: int, spans: Spans, warm: range, measured: range, workdir: Path) -> dict:
    broker = TansuBroker()
    broker.start()
    collector_settings = with_bus(
        settings_for(
            workdir / "collector",
            **{"routing.mode": "route", "sessions.idle_timeout_seconds": IDLE_SECONDS},
        ),
        **{"kafka.bootstrap": broker.bootstrap, **GROUP},
    )
    collector = BackgroundService(
        collector_settings, functools.partial(build_roles, role="collector")
    )
    members: list[ServeProcess] = []
    try:
        service = collector.start(timeout=60)
        urls = itertools.repeat(f"http://127.0.0.1:{service.ports.otlp_http}")
        members = [member(broker.bootstrap, workdir / f"member-{n}") for n in range(count)]
        warm_up = spans.conversations(warm.start, warm.stop)
        post(urls, warm_up)
        eventually(
            lambda: [
                m.metric("turnwatch_bus_records_produced_total", topic=SESSIONS) for m in members
            ],
            lambda counts: all(counts),
            timeout=300,
            interval=0.5,
            what="every member to publish a warm-up session",
        )
        group = collector_settings.bus.kafka.sessionizer_group
        eventually(
            lambda: uncommitted(broker.bootstrap, group, OBSERVATIONS),
            lambda left: left == 0,
            timeout=300,
            interval=0.5,
            what="the warm-up to be committed",
        )
        before = published(members)
        requests = spans.conversations(measured.start, measured.stop)
        cpu_before = sum(cpu_seconds(m.process.pid) for m in members)
        started = time.perf_counter()
        post(urls, requests)
        eventually(
            lambda: (
                published(members) - before,
                uncommitted(broker.bootstrap, group, OBSERVATIONS),
            ),
            lambda state: state[0] >= len(measured) and state[1] == 0,
            timeout=600,
            interval=0.2,
            what="every measured session published and committed",
        )
        elapsed = time.perf_counter() - started
        cpu = sum(cpu_seconds(m.process.pid) for m in members) - cpu_before
        sessions = published(members) - before
        assert topic_size(broker.bootstrap, SESSIONS) == published(members)
        return {"members": count, "sessions": sessions, "seconds": elapsed, "cpu": cpu}
    finally:
        for running in members:
            running.stop()
        collector.stop()
        broker.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--conversations", type=int, default=60)
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    configurations = [1, 2, 3]
    per_run = WARM_UP + args.conversations
    spans = Spans(per_run * len(configurations) * args.rounds)
    slots = iter(range(0, len(spans.corpus.conversations), per_run))
    rows: list[dict] = []
    with TemporaryDirectory() as scratch:
        for round_number in range(args.rounds):
            order = configurations if round_number % 2 == 0 else configurations[::-1]
            results = {}
            for count in order:
                start = next(slots)
                warm = range(start, start + WARM_UP)
                measured = range(start + WARM_UP, start + per_run)
                workdir = Path(scratch) / f"round-{round_number}-{count}"
                results[count] = measure(count, spans, warm, measured, workdir)
            base = results[1]
            for count in configurations:
                row = results[count]
                row["rate"] = row["sessions"] / row["seconds"]
                row["per_cpu"] = row["sessions"] / row["cpu"]
                row["rate_ratio"] = row["rate"] / (base["sessions"] / base["seconds"])
                row["cpu_ratio"] = row["per_cpu"] / (base["sessions"] / base["cpu"])
                rows.append(dict(row, round=round_number))
    print(
        f"{'round':>5} {'members':>7} {'sessions':>8} {'seconds':>8} {'sessions/s':>10} "
        f"{'x 1 member':>10} {'member CPU-s':>12} {'sessions/CPU-s':>14} {'x 1 member':>10}"
    )
    for row in rows:
        print(
            f"{row['round']:>5} {row['members']:>7} {row['sessions']:>8.0f} {row['seconds']:>8.1f} "
            f"{row['rate']:>10.2f} {row['rate_ratio']:>10.2f} {row['cpu']:>12.1f} "
            f"{row['per_cpu']:>14.2f} {row['cpu_ratio']:>10.2f}"
        )
    print(f"cores: {os.cpu_count()}; idle timeout {IDLE_SECONDS} s included in each time")


if __name__ == "__main__":
    main()
