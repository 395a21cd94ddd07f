"""Ingest benchmark: OTLP/HTTP protobuf requests of 512 chat spans into closed sessions.

Starts turnwatch's collector as a subprocess (receivers, decoders, sessionizer, sampler at rate
1.0, session assembly; de-identification is benchmarks/deid.py's subject), pre-serialises
requests (512 GenAI chat spans each, about 1 KB of message text per span, conversations of 8
model calls whose last span carries the end marker so sessions close at once), and posts them
over loopback from this separate process. A run ends when every session is assembled.

Prints, for a saturating closed-loop run and for a paced run at half that throughput: spans/s
(wall clock), spans per server CPU-second (the per-core figure), p50/p99 response time, and the
server's peak RSS; plus the baseline measured in the same run: bare protobuf parsing of the same
requests in this process (the floor any OTLP receiver pays).

The per-core figure is given twice: end to end (every span decoded, sessionized, sampled, and
every sampled session assembled into its validated wire record), and for the request path alone
(spans into closed, sampled sessions on the handoff queue), which leaves out the assembly time
the server reports in `turnwatch_session_assembly_seconds`. Assembly runs per sampled session,
so its share scales with the sampling rate.

    python benchmarks/ingest.py [--requests 120] [--clients 4]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import re
import signal
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from turnwatch import collector

SPANS_PER_REQUEST = 512
CALLS_PER_CONVERSATION = 8
WORDS = [
    "order",
    "refund",
    "shipping",
    "address",
    "parcel",
    "invoice",
    "account",
    "billing",
    "delivery",
    "tracking",
]


def _kv(key: str, value: str | int) -> KeyValue:
    if isinstance(value, int):
        return KeyValue(key=key, value=AnyValue(int_value=value))
    return KeyValue(key=key, value=AnyValue(string_value=value))


def _text(rng: random.Random, length: int) -> str:
    words: list[str] = []
    while sum(len(w) + 1 for w in words) < length:
        words.append(rng.choice(WORDS))
    return " ".join(words)


def build_requests(count: int, seed: int = 7) -> list[bytes]:
    rng = random.Random(seed)
    bodies = []
    conversation = 0
    call = 0
    for _ in range(count):
        request = ExportTraceServiceRequest()
        resource_spans = request.resource_spans.add()
        resource_spans.resource.attributes.append(_kv("service.name", "bench-bot"))
        scope = resource_spans.scope_spans.add()
        scope.scope.name = "bench"
        for _ in range(SPANS_PER_REQUEST):
            inputs = json.dumps(
                [{"role": "user", "parts": [{"type": "text", "content": _text(rng, 500)}]}]
            )
            outputs = json.dumps(
                [
                    {
                        "role": "assistant",
                        "parts": [{"type": "text", "content": _text(rng, 500)}],
                        "finish_reason": "stop",
                    }
                ]
            )
            start = time.time_ns()
            attributes = [
                _kv("gen_ai.operation.name", "chat"),
                _kv("gen_ai.provider.name", "openai"),
                _kv("gen_ai.request.model", "gpt-4o-mini"),
                _kv("gen_ai.conversation.id", f"bench-{conversation}"),
                _kv("gen_ai.input.messages", inputs),
                _kv("gen_ai.output.messages", outputs),
                _kv("gen_ai.usage.input_tokens", 130),
                _kv("gen_ai.usage.output_tokens", 120),
            ]
            call += 1
            if call == CALLS_PER_CONVERSATION:
                attributes.append(_kv("turnwatch.session.end", "true"))
                call = 0
                conversation += 1
            scope.spans.append(
                Span(
                    trace_id=rng.randbytes(16),
                    span_id=rng.randbytes(8),
                    name="chat gpt-4o-mini",
                    kind=Span.SPAN_KIND_CLIENT,
                    start_time_unix_nano=start,
                    end_time_unix_nano=start + 900_000_000,
                    attributes=attributes,
                )
            )
        bodies.append(request.SerializeToString())
    return bodies


class Server:
    def __init__(
        self, sampling_rate: float, script: str = __file__, extra: tuple[str, ...] = ()
    ) -> None:
        """The collector in a subprocess: `script --serve-collector` (this one, or another
        benchmark's that calls `serve_collector` with more settings) given `extra` arguments."""
        rate = str(sampling_rate)
        self.process = subprocess.Popen(
            [sys.executable, script, "--serve-collector", "--sampling-rate", rate, *extra],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        line = self.process.stdout.readline()
        ports = re.findall(r":(\d+)", line)
        if len(ports) < 3:
            raise RuntimeError(f"turnwatch did not start: {line!r}")
        self.http_port, self.ops_port = int(ports[0]), int(ports[-1])

    def cpu_seconds(self) -> float:
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def peak_rss_mib(self) -> float:
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
        return float("nan")

    def metric(self, name: str, label: str = "") -> float:
        text = urllib.request.urlopen(f"http://127.0.0.1:{self.ops_port}/metrics").read().decode()
        total = 0.0
        for line in text.splitlines():
            if line.startswith(name) and label in line and not line.startswith("#"):
                total += float(line.rsplit(" ", 1)[1])
        return total

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(30)


def post_all(port: int, bodies: list[bytes], clients: int, interval: float | None) -> list[float]:
    """Post every body; return response times. `interval` paces sends (open loop) if set."""
    latencies: list[float] = []
    lock = threading.Lock()
    next_index = [0]
    started = time.perf_counter()

    def worker() -> None:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        while True:
            with lock:
                index = next_index[0]
                next_index[0] += 1
            if index >= len(bodies):
                break
            if interval is not None:
                delay = started + index * interval - time.perf_counter()
                if delay > 0:
                    time.sleep(delay)
            sent = time.perf_counter()
            connection.request(
                "POST", "/v1/traces", bodies[index], {"Content-Type": "application/x-protobuf"}
            )
            response = connection.getresponse()
            response.read()
            if response.status != 200:
                raise RuntimeError(f"HTTP {response.status}")
            with lock:
                latencies.append(time.perf_counter() - sent)
        connection.close()

    threads = [threading.Thread(target=worker) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return latencies


def run(server: Server, bodies: list[bytes], clients: int, interval: float | None) -> dict:
    closed_before = server.metric("turnwatch_sessions_closed_total")
    delivered_before = server.metric("turnwatch_handoff_delivered_total")
    assembly_before = server.metric("turnwatch_session_assembly_seconds_sum")
    expected = len(bodies) * SPANS_PER_REQUEST // CALLS_PER_CONVERSATION
    cpu_before = server.cpu_seconds()
    started = time.perf_counter()
    latencies = post_all(server.http_port, bodies, clients, interval)
    # Done when every session is closed and every sampled one is assembled and handed on.
    while (
        server.metric("turnwatch_sessions_closed_total") - closed_before < expected
        or server.metric("turnwatch_handoff_queue_depth") > 0
    ):
        time.sleep(0.1)
    elapsed = time.perf_counter() - started
    cpu = server.cpu_seconds() - cpu_before
    assembly = server.metric("turnwatch_session_assembly_seconds_sum") - assembly_before
    spans = len(bodies) * SPANS_PER_REQUEST
    latencies.sort()
    return {
        "spans_per_s": spans / elapsed,
        "spans_per_cpu_s": spans / cpu if cpu else float("nan"),
        "request_path_per_cpu_s": spans / (cpu - assembly) if cpu > assembly else float("nan"),
        "assembly_us_per_span": 1e6 * assembly / spans,
        "p50_ms": 1000 * statistics.median(latencies),
        "p99_ms": 1000 * latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))],
        "sessions": expected,
        "assembled": int(server.metric("turnwatch_handoff_delivered_total") - delivered_before),
    }


def baseline_parse(bodies: list[bytes]) -> float:
    started = time.process_time()
    for body in bodies:
        ExportTraceServiceRequest().ParseFromString(body)
    return len(bodies) * SPANS_PER_REQUEST / (time.process_time() - started)


class CountingSink:
    def __init__(self) -> None:
        self.sessions = 0

    async def deliver(self, session: object) -> None:
        self.sessions += 1


def serve_collector(sampling_rate: float, overrides: dict[str, object] | None = None) -> None:
    """The server process: the collector stage alone, every session assembled into its record.

    De-identification is left out on purpose: it is measured by benchmarks/deid.py, and at
    Presidio's speed it would measure that stage instead of ingest.
    """
    from turnwatch.app.collector_role import CollectorRole
    from turnwatch.app.roles import Roles
    from turnwatch.app.serve import BackgroundService
    from turnwatch.app.settings import load_settings

    settings = load_settings(
        None,
        {
            "otlp.http_port": 0,
            "otlp.grpc_port": 0,
            "ops.port": 0,
            "sessions.idle_timeout_seconds": 30,
            "handoff.queue_size": 100_000,
            "sampling.rate": sampling_rate,
            "log.level": "WARNING",
            **(overrides or {}),
        },
    )
    sink = CountingSink()
    background = BackgroundService(
        settings, lambda context: Roles(collector=CollectorRole(context, sink))
    )
    service = background.start()
    ports = service.ports
    print(f"ports :{ports.otlp_http} :{ports.otlp_grpc} :{ports.ops}", flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    stop.wait()
    background.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=120)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument(
        "--sampling-rate", type=float, default=1.0, help="1.0 assembles every session (worst case)"
    )
    parser.add_argument("--serve-collector", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_collector:
        serve_collector(args.sampling_rate)
        return

    warmup = build_requests(8, seed=1)
    bodies = build_requests(args.requests, seed=2)
    paced_bodies = build_requests(args.requests // 2, seed=3)
    size_kib = statistics.mean(len(b) for b in bodies) / 1024
    server = Server(args.sampling_rate)
    try:
        run(server, warmup, args.clients, None)
        saturated = run(server, bodies, args.clients, None)
        half_rate_interval = SPANS_PER_REQUEST / (saturated["spans_per_s"] / 2)
        paced = run(server, paced_bodies, args.clients, half_rate_interval)
        rss = server.peak_rss_mib()
    finally:
        server.stop()
    parse_rate = baseline_parse(bodies)

    print(
        f"ingest: {args.requests} requests x {SPANS_PER_REQUEST} spans, {size_kib:.0f} KiB each, "
        f"{args.clients} client threads, {os.cpu_count()} cores, "
        f"sampling rate {args.sampling_rate}, "
        f"{collector.BUILD}"
    )
    print(
        f"{'run':<20}{'spans/s':>9}{'spans/CPU-s':>13}{'request path':>14}{'assembly':>10}"
        f"{'p50 ms':>8}{'p99 ms':>8}{'sessions':>10}{'assembled':>11}"
    )
    print(f"{'':<20}{'':>9}{'end to end':>13}{'spans/CPU-s':>14}{'us/span':>10}")
    for name, row in (("saturated", saturated), ("half load (paced)", paced)):
        print(
            f"{name:<20}{row['spans_per_s']:>9.0f}{row['spans_per_cpu_s']:>13.0f}"
            f"{row['request_path_per_cpu_s']:>14.0f}{row['assembly_us_per_span']:>10.1f}"
            f"{row['p50_ms']:>8.1f}{row['p99_ms']:>8.1f}{row['sessions']:>10}"
            f"{row['assembled']:>11}"
        )
    print(
        f"{'baseline: protobuf parse only':<35}{parse_rate:>10.0f} spans/CPU-s "
        f"(turnwatch = {saturated['spans_per_cpu_s'] / parse_rate:.2f}x of it)"
    )
    print(f"server peak RSS: {rss:.0f} MiB; goal: >= 20000 spans/CPU-s, p99 < 50 ms at half load")


if __name__ == "__main__":
    main()
