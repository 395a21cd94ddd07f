"""Ingest benchmark: OTLP/HTTP protobuf requests of 512 chat spans into closed sessions.

Starts turnwatch's collector as a subprocess (receivers, decoders, sessionizer, sampler, session
assembly; de-identification is benchmarks/deid.py's subject) and posts pre-serialised requests
(512 GenAI chat spans each, about 1 KB of message text per span that never repeats, conversations
of 8 model calls whose last span carries the end marker so sessions close at once; see
benchmarks/otlp_load.py) over loopback from this separate process. A run ends when every session
is assembled. Every phase and round gets conversation keys of its own.

Prints, per round: spans/s (wall clock) and spans per server CPU-second (CPU time from /proc) for
a saturating closed-loop run and for a paced run at half that throughput, p50/p99 response time;
the request path alone in CPU time too (server CPU minus the CPU time the server reports for
assembly in `turnwatch_session_assembly_seconds`); and baselines measured in the same rounds, on
requests of the same kind: bare protobuf parsing in this process (the floor any OTLP receiver
pays), parsing that also reads every attribute's key and value (what any receiver that looks at
the data pays, in Python), and rotel (a native Rust OTLP collector, decode and drop) as a server
process like turnwatch, when it is installed (`pip install rotel`). The order of the phases is
reversed every other round.

    python benchmarks/ingest.py [--requests 80] [--clients 4] [--rounds 3] [--sampling-rate R]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from benchmarks.otlp_load import (
    CALLS_PER_CONVERSATION,
    SPANS_PER_REQUEST,
    Load,
    RotelServer,
    Server,
    TurnwatchServer,
    post_all,
    rotel_binary,
)
from turnwatch import collector

Row = dict[str, float]


def run_turnwatch(
    server: TurnwatchServer, bodies: list[bytes], clients: int, interval: float | None
) -> Row:
    closed_before = server.metric("turnwatch_sessions_closed_total")
    assembly_before = server.metric("turnwatch_session_assembly_seconds_sum")
    sessions = len(bodies) * SPANS_PER_REQUEST // CALLS_PER_CONVERSATION
    cpu_before = server.cpu_seconds()
    started = time.perf_counter()
    posted = post_all(server.http_port, bodies, clients, interval)
    server.settle(int(closed_before) + sessions)
    elapsed = time.perf_counter() - started
    cpu = server.cpu_seconds() - cpu_before
    assembly = server.metric("turnwatch_session_assembly_seconds_sum") - assembly_before
    spans = len(bodies) * SPANS_PER_REQUEST
    latencies = sorted(posted.latencies)
    return {
        "spans_per_s": spans / elapsed,
        "spans_per_cpu_s": spans / cpu,
        "request_path_per_cpu_s": spans / (cpu - assembly),
        "assembly_us_per_span": 1e6 * assembly / spans,
        "p50_ms": 1000 * statistics.median(latencies),
        "p99_ms": 1000 * latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))],
        "retries": posted.retries,
    }


def run_rotel(server: Server, bodies: list[bytes], clients: int) -> float:
    """Spans per CPU-second of a native receiver, once its CPU time stops growing."""
    cpu_before = server.cpu_seconds()
    post_all(server.http_port, bodies, clients)
    cpu, settled = server.cpu_seconds(), 0
    while settled < 3:
        time.sleep(0.1)
        now = server.cpu_seconds()
        settled = settled + 1 if now == cpu else 0
        cpu = now
    return len(bodies) * SPANS_PER_REQUEST / (cpu - cpu_before)


def baseline_parse(bodies: list[bytes]) -> float:
    started = time.process_time()
    for body in bodies:
        ExportTraceServiceRequest().ParseFromString(body)
    return len(bodies) * SPANS_PER_REQUEST / (time.process_time() - started)


def baseline_read_attributes(bodies: list[bytes]) -> float:
    """Parse, then read every span's ids, times and every attribute's key and value."""
    read: list[object] = []
    started = time.process_time()
    for body in bodies:
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        for resource_spans in request.resource_spans:
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    read += (span.trace_id, span.span_id, span.start_time_unix_nano, span.name)
                    for kv in span.attributes:
                        value = kv.value
                        kind = value.WhichOneof("value")
                        read += (kv.key, getattr(value, kind) if kind else None)
        read.clear()
    return len(bodies) * SPANS_PER_REQUEST / (time.process_time() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=80)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--sampling-rate", type=float, default=1.0, help="1.0 assembles every session (worst case)"
    )
    args = parser.parse_args()

    rotel = rotel_binary()
    server = TurnwatchServer(
        {
            "sessions.idle_timeout_seconds": 30,
            "handoff.queue_size": 100_000,
            "sampling.rate": args.sampling_rate,
        }
    )
    native = RotelServer(rotel) if rotel is not None else None
    rows: dict[str, list[Row]] = {"saturated": [], "half load (paced)": []}
    baselines: dict[str, list[float]] = {"parse": [], "read": [], "rotel": []}
    size_kib = 0.0
    try:
        run_turnwatch(server, Load("warmup", 1).requests(8), args.clients, None)
        for round_number in range(args.rounds):
            load = Load(f"round{round_number}", 100 + round_number)
            saturated_bodies = load.requests(args.requests)
            paced_bodies = load.requests(args.requests // 2)
            baseline_bodies = load.requests(args.requests)
            size_kib = statistics.mean(len(b) for b in saturated_bodies) / 1024

            def turnwatch_runs(
                saturated: list[bytes] = saturated_bodies, paced: list[bytes] = paced_bodies
            ) -> None:
                # The paced run follows the saturated one: it runs at half of its throughput.
                rows["saturated"].append(run_turnwatch(server, saturated, args.clients, None))
                interval = SPANS_PER_REQUEST / (rows["saturated"][-1]["spans_per_s"] / 2)
                rows["half load (paced)"].append(
                    run_turnwatch(server, paced, args.clients, interval)
                )

            def parse(bodies: list[bytes] = baseline_bodies) -> None:
                baselines["parse"].append(baseline_parse(bodies))

            def read(bodies: list[bytes] = baseline_bodies) -> None:
                baselines["read"].append(baseline_read_attributes(bodies))

            def native_run(bodies: list[bytes] = baseline_bodies) -> None:
                if native is not None:
                    baselines["rotel"].append(run_rotel(native, bodies, args.clients))

            phases: list[Callable[[], None]] = [parse, read, turnwatch_runs, native_run]
            if round_number % 2:
                phases.reverse()
            for phase in phases:
                phase()
        rss = server.peak_rss_mib()
    finally:
        server.stop()
        if native is not None:
            native.stop()

    print(
        f"ingest: {args.rounds} rounds of {args.requests} requests x {SPANS_PER_REQUEST} spans, "
        f"{size_kib:.0f} KiB each, {args.clients} client threads, {os.cpu_count()} cores, "
        f"sampling rate {args.sampling_rate}, {collector.BUILD}; ranges over rounds"
    )
    print(
        f"{'run':<20}{'spans/s':>17}{'spans/CPU-s':>17}{'request path':>17}{'assembly':>14}"
        f"{'p50 ms':>19}{'p99 ms':>19}{'503s':>6}"
    )
    print(f"{'':<20}{'':>17}{'end to end':>17}{'spans/CPU-s':>17}{'CPU us/span':>14}")

    def span_of(values: list[float], digits: int = 0) -> str:
        return f"{min(values):,.{digits}f}-{max(values):,.{digits}f}"

    for name, measured in rows.items():
        print(
            f"{name:<20}{span_of([r['spans_per_s'] for r in measured]):>17}"
            f"{span_of([r['spans_per_cpu_s'] for r in measured]):>17}"
            f"{span_of([r['request_path_per_cpu_s'] for r in measured]):>17}"
            f"{span_of([r['assembly_us_per_span'] for r in measured], 1):>14}"
            f"{span_of([r['p50_ms'] for r in measured], 1):>19}"
            f"{span_of([r['p99_ms'] for r in measured], 1):>19}"
            f"{int(sum(r['retries'] for r in measured)):>6}"
        )
    turnwatch = [r["spans_per_cpu_s"] for r in rows["saturated"]]
    for name, label in (
        ("parse", "baseline: protobuf parse only (this process)"),
        ("read", "baseline: parse + read every attribute (this process)"),
        ("rotel", "baseline: rotel, native, decode and drop (server)"),
    ):
        values = baselines[name]
        if not values:
            print(f"{label:<56} not installed (pip install rotel)")
            continue
        ratios = [t / b for t, b in zip(turnwatch, values, strict=True)]
        print(
            f"{label:<56}{span_of(values):>22} spans/CPU-s; "
            f"turnwatch saturated = {span_of(ratios, 3)}x of it"
        )
    print(f"turnwatch server peak RSS: {rss:.0f} MiB")


if __name__ == "__main__":
    main()
