"""OTLP/HTTP load shared by the ingest and steady-state benchmarks, and the servers they load.

Requests are OTLP/protobuf trace requests of GenAI chat spans (about 1 KB of message text each,
words drawn at random, so no text repeats), conversations of a fixed number of model calls whose
last span carries the end marker. Every conversation key is new: `Load` numbers conversations on
from where it stopped, under a prefix per run, so no phase reassembles another's conversations.

Servers run in their own process, so their CPU time is read from /proc, not guessed from wall
time: turnwatch's collector stage (`python benchmarks/otlp_load.py --serve-collector`, the
default configuration but for free ports) and, as the native floor, rotel (a Rust OTLP collector
from PyPI, `pip install rotel`) receiving into its blackhole exporter.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span

SPANS_PER_REQUEST = 512
CALLS_PER_CONVERSATION = 8
WORDS = [
    *("order", "refund", "shipping", "address", "parcel", "invoice", "account", "billing"),
    *("delivery", "tracking", "courier", "warehouse", "return", "label", "payment", "card"),
    *("receipt", "discount", "voucher", "basket", "checkout"),
]


def _kv(key: str, value: str | int) -> KeyValue:
    if isinstance(value, int):
        return KeyValue(key=key, value=AnyValue(int_value=value))
    return KeyValue(key=key, value=AnyValue(string_value=value))


AVERAGE_WORD = sum(len(word) + 1 for word in WORDS) / len(WORDS)


def _text(rng: random.Random, length: int) -> str:
    return " ".join(rng.choices(WORDS, k=round(length / AVERAGE_WORD)))


class Load:
    """Chat-span requests for conversations that each get a key no earlier request used."""

    def __init__(self, prefix: str, seed: int, calls: int = CALLS_PER_CONVERSATION) -> None:
        self.prefix = prefix
        self.rng = random.Random(seed)
        self.calls = calls
        self.conversation = 0
        self.call = 0

    def requests(self, count: int, spans: int = SPANS_PER_REQUEST) -> list[bytes]:
        return [self._request(spans) for _ in range(count)]

    def _request(self, spans: int) -> bytes:
        rng = self.rng
        request = ExportTraceServiceRequest()
        resource_spans = request.resource_spans.add()
        resource_spans.resource.attributes.append(_kv("service.name", "bench-bot"))
        scope = resource_spans.scope_spans.add()
        scope.scope.name = "bench"
        for _ in range(spans):
            question = [{"role": "user", "parts": [{"type": "text", "content": _text(rng, 500)}]}]
            answer = [
                {
                    "role": "assistant",
                    "parts": [{"type": "text", "content": _text(rng, 500)}],
                    "finish_reason": "stop",
                }
            ]
            start = time.time_ns()
            attributes = [
                _kv("gen_ai.operation.name", "chat"),
                _kv("gen_ai.provider.name", "openai"),
                _kv("gen_ai.request.model", "gpt-4o-mini"),
                _kv("gen_ai.conversation.id", f"{self.prefix}-{self.conversation}"),
                _kv("gen_ai.input.messages", json.dumps(question)),
                _kv("gen_ai.output.messages", json.dumps(answer)),
                _kv("gen_ai.usage.input_tokens", 130),
                _kv("gen_ai.usage.output_tokens", 120),
            ]
            self.call += 1
            if self.call == self.calls:
                attributes.append(_kv("turnwatch.session.end", "true"))
                self.call = 0
                self.conversation += 1
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
        return request.SerializeToString()


def process_cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def process_memory_mib(pid: int, field_name: str = "VmRSS") -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field_name}:"):
            return int(line.split()[1]) / 1024
    return float("nan")


class Server:
    """A receiver in its own process, with the port it takes OTLP/HTTP on."""

    name = "server"
    process: subprocess.Popen
    http_port: int

    def cpu_seconds(self) -> float:
        return process_cpu_seconds(self.process.pid)

    def rss_mib(self) -> float:
        return process_memory_mib(self.process.pid)

    def peak_rss_mib(self) -> float:
        return process_memory_mib(self.process.pid, "VmHWM")

    def settle(self, sessions: int) -> None:
        """Wait until what was posted is processed (the receiver answered: nothing pending)."""

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(30)


class TurnwatchServer(Server):
    name = "turnwatch"

    def __init__(self, overrides: dict[str, object] | None = None) -> None:
        self.process = subprocess.Popen(
            [sys.executable, __file__, "--serve-collector", json.dumps(overrides or {})],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        ports = re.findall(r":(\d+)", line)
        if len(ports) < 3:
            raise RuntimeError(f"turnwatch did not start: {line!r}")
        self.http_port, self.ops_port = int(ports[0]), int(ports[-1])

    def metric(self, name: str, label: str = "") -> float:
        text = urllib.request.urlopen(f"http://127.0.0.1:{self.ops_port}/metrics").read().decode()
        total = 0.0
        for line in text.splitlines():
            if line.startswith(name) and label in line and not line.startswith("#"):
                total += float(line.rsplit(" ", 1)[1])
        return total

    def settle(self, sessions: int) -> None:
        """Every session closed and every sampled one assembled and handed on."""
        while (
            self.metric("turnwatch_sessions_closed_total") < sessions
            or self.metric("turnwatch_handoff_queue_depth") > 0
        ):
            time.sleep(0.05)


def rotel_binary() -> Path | None:
    try:
        import rotel  # optional: only the native baseline needs it
    except ImportError:
        return None
    binary = Path(rotel.__file__).parent / "rotel-agent"
    return binary if binary.exists() else None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class RotelServer(Server):
    """rotel decoding OTLP and dropping it (blackhole exporter): what a native receiver costs."""

    name = "rotel"

    def __init__(self, binary: Path) -> None:
        self.http_port = _free_port()
        self.process = subprocess.Popen(
            [
                str(binary),
                "start",
                "--otlp-http-endpoint",
                f"127.0.0.1:{self.http_port}",
                "--otlp-grpc-endpoint",
                f"127.0.0.1:{_free_port()}",
                "--exporter",
                "blackhole",
                "--pid-file",
                os.devnull,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", self.http_port)) == 0:
                    return
            time.sleep(0.05)
        self.stop()
        raise RuntimeError("rotel did not start")


@dataclass
class Posted:
    latencies: list[float] = field(default_factory=list)
    retries: int = 0  # 503s answered (the handoff queue above its watermark), each sent again


def post_all(
    port: int, bodies: Sequence[bytes], clients: int, interval: float | None = None
) -> Posted:
    """Post every body over `clients` connections; `interval` paces sends (open loop) if set.
    A 503 is retried after a short pause, as an OTLP exporter would after Retry-After."""
    posted = Posted()
    lock = threading.Lock()
    next_index = [0]
    started = time.perf_counter()

    def worker() -> None:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
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
            while True:
                sent = time.perf_counter()
                connection.request(
                    "POST", "/v1/traces", bodies[index], {"Content-Type": "application/x-protobuf"}
                )
                response = connection.getresponse()
                response.read()
                if response.status == 503:
                    with lock:
                        posted.retries += 1
                    time.sleep(0.05)
                    continue
                if response.status != 200:
                    raise RuntimeError(f"HTTP {response.status}")
                break
            with lock:
                posted.latencies.append(time.perf_counter() - sent)
        connection.close()

    threads = [threading.Thread(target=worker) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return posted


class CountingSink:
    def __init__(self) -> None:
        self.sessions = 0

    async def deliver(self, session: object) -> None:
        self.sessions += 1


def serve_collector(overrides: dict[str, object]) -> None:
    """The server process: the collector stage alone, every sampled session assembled.

    De-identification is left out on purpose: it is measured by benchmarks/deid.py, and at
    Presidio's speed it would measure that stage instead of ingest.
    """
    from turnwatch.app.collector_role import CollectorRole
    from turnwatch.app.roles import Roles
    from turnwatch.app.serve import BackgroundService
    from turnwatch.app.settings import load_settings

    settings = load_settings(
        None,
        {"otlp.http_port": 0, "otlp.grpc_port": 0, "ops.port": 0, "log.level": "WARNING"}
        | overrides,
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


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--serve-collector", metavar="OVERRIDES_JSON", required=True)
    serve_collector(json.loads(parser.parse_args().serve_collector))
