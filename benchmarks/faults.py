"""Faults: issue 17's cases reproduced against a real `turnwatch serve` subprocess, one table row
each: the case, what was sent, the outcome, the worst `/healthz` latency while it ran (polled
every 20 ms from another connection), the server's peak RSS growth during it and the rejection
counters it moved.

    python benchmarks/faults.py [--only NAME ...] [--list]

A fault is a function registered with `@fault(case, name, sent, server=...)`: it gets the
running server (tests/serve_process.py: URLs, counters, /proc memory) and returns an Outcome,
text and whether it is the expected one. Faults that need the same server settings share one
process (SERVERS); add a server there when a case needs its own (a descriptor limit, a broker,
a judge). tests/test_reliability_hostile.py runs this registry and asserts every outcome, no
missed /healthz poll, and the memory bound on the maximum-size requests.
"""

from __future__ import annotations

import argparse
import base64
import gzip
import random
import socket
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import grpc  # noqa: E402
import httpx  # noqa: E402
import orjson  # noqa: E402
from google.rpc.status_pb2 import Status  # noqa: E402
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (  # noqa: E402
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.resource.v1.resource_pb2 import Resource  # noqa: E402
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span  # noqa: E402

from tests.flood import flood_request  # noqa: E402
from tests.otlp_requests import (  # noqa: E402
    JSON,
    PROTOBUF,
    chat_span,
    closed_by_server,
    deep_json_value,
    deep_span,
    key_values,
    otlp_json,
    spans_request,
    trace_request,
)
from tests.serve_process import HealthWatch, ServeProcess  # noqa: E402

MiB = 1024 * 1024
MEMORY_BOUND_MIB = 300
HEALTHZ_BOUND_SECONDS = 1.0
TRACES = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
REJECTION_COUNTERS = (
    "turnwatch_otlp_requests_rejected_total",
    "turnwatch_spans_rejected_total",
    "turnwatch_ops_requests_rejected_total",
)
QUIET = {
    "sessions.idle_timeout_seconds": 1.0,
    "sessions.sweep_interval_seconds": 0.2,
    "otlp.header_timeout_seconds": 2.0,
    "otlp.body_timeout_seconds": 3.0,
    "log.level": "WARNING",
}
SERVERS: dict[str, tuple[dict[str, Any], int | None]] = {
    # Nothing sampled: faults measure the receivers, not de-identification of what they took.
    "default": ({**QUIET, "sampling.rate": 0.0}, None),
    # A header deadline longer than the fault, so the idle connections stay until the connection
    # cap (lowered to fit the descriptor limit) evicts them, not the deadline.
    "descriptors_1024": (
        {**QUIET, "sampling.rate": 0.0, "otlp.header_timeout_seconds": 60.0},
        1024,
    ),
    "scoring": ({**QUIET, "sessions.idle_timeout_seconds": 0.5}, None),
}
"""Server name -> (settings, RLIMIT_NOFILE for the process or None)."""


@dataclass
class Outcome:
    text: str
    expected: bool


@dataclass
class Fault:
    case: str
    name: str
    sent: str
    run: Callable[[ServeProcess], Outcome]
    server: str
    max_request: bool
    """A maximum-size request the caps let through: its peak RSS growth has MEMORY_BOUND_MIB."""


@dataclass
class Row:
    fault: Fault
    outcome: Outcome
    worst_healthz: float
    missed_healthz: int
    peak_growth_mib: float
    counters: dict[str, float] = field(default_factory=dict)


FAULTS: list[Fault] = []


def fault(
    case: str, name: str, sent: str, server: str = "default", max_request: bool = False
) -> Callable[[Callable[[ServeProcess], Outcome]], Callable[[ServeProcess], Outcome]]:
    def register(run: Callable[[ServeProcess], Outcome]) -> Callable[[ServeProcess], Outcome]:
        FAULTS.append(Fault(case, name, sent, run, server, max_request))
        return run

    return register


def post(server: ServeProcess, body: bytes, media_type: str = PROTOBUF, **headers: str):
    sent = {"Content-Type": media_type, **{k.replace("_", "-"): v for k, v in headers.items()}}
    return server.client.post(f"{server.otlp_url}/v1/traces", content=body, headers=sent)


def answered(response, expected_status: int) -> Outcome:
    text = f"{response.status_code}"
    if response.status_code == 200 and response.headers.get("content-type") == PROTOBUF:
        partial = ExportTraceServiceResponse.FromString(response.content).partial_success
        if partial.rejected_spans:
            text += f", {partial.rejected_spans} rejected ({partial.error_message})"
    elif response.status_code != 200:
        if response.headers.get("content-type") == PROTOBUF:
            text += f" {Status.FromString(response.content).message}"
        else:
            text += f" {orjson.loads(response.content)['message']}"
    return Outcome(text, response.status_code == expected_status)


def _text_spans(name: str, count: int, text_bytes: int) -> list[Span]:
    """`count` GenAI chat spans (500 conversations) whose answers carry `text_bytes` of words."""
    rng = random.Random(name)
    vocabulary = ["order", "refund", "parcel", "invoice", "account", "delivery", "address", "card"]
    return [
        chat_span(
            f"{name}-{number % 500}",
            number,
            extra={"gen_ai.output.messages": " ".join(rng.choices(vocabulary, k=text_bytes // 7))},
        )
        for number in range(count)
    ]


def deflated(body: bytes) -> bytes:
    """gzip at level 6: as small as level 9 for these bodies, in an eighth of the time."""
    return gzip.compress(body, compresslevel=6)


def _id_only_spans(size: int) -> bytes:
    span = Span(trace_id=b"\x01" * 16, span_id=b"\x02" * 8).SerializeToString()
    return spans_request(*[span] * (size // (len(span) + 2)))


# --- case 1 ------------------------------------------------------------------------------------


@fault("1", "gzip-members", "8 MiB gzip body of 419,430 empty members")
def _gzip_members(server: ServeProcess) -> Outcome:
    member = deflated(b"")
    return answered(post(server, member * (8 * MiB // len(member)), content_encoding="gzip"), 200)


# --- case 2 ------------------------------------------------------------------------------------


@fault("2", "tiny-spans", "0.2 MB of gzip inflating to 64 MiB: 2.2 M spans of two ids each")
def _tiny_spans(server: ServeProcess) -> Outcome:
    body = deflated(_id_only_spans(64 * MiB - 64))
    return answered(post(server, body, content_encoding="gzip"), 413)


@fault("2", "tiny-json", "gzip inflating to 64 MiB of OTLP/JSON: 0.9 M spans of two ids each")
def _tiny_json(server: ServeProcess) -> Outcome:
    span = b'{"traceId":"01010101010101010101010101010101","spanId":"0202020202020202"},'
    count = (64 * MiB - 100) // len(span)
    spans = span * count
    body = b'{"resourceSpans":[{"scopeSpans":[{"spans":[' + spans[:-1] + b"]}]}]}"
    return answered(post(server, deflated(body), JSON, content_encoding="gzip"), 413)


@fault("2", "tiny-events", "gzip inflating to one 64 MiB span of 33 M empty events")
def _tiny_events(server: ServeProcess) -> Outcome:
    span = chat_span("tiny-events").SerializeToString() + b"\x5a\x00" * (32 * MiB - 1024)
    return answered(post(server, deflated(spans_request(span)), content_encoding="gzip"), 413)


@fault(
    "2",
    "max-spans",
    "gzip inflating to 62 MiB: 10,000 GenAI spans of 6 KB text (the span cap)",
    max_request=True,
)
def _max_spans(server: ServeProcess) -> Outcome:
    body = trace_request(_text_spans("max", 10_000, 6_000)).SerializeToString()
    return answered(post(server, deflated(body), content_encoding="gzip"), 200)


@fault(
    "2",
    "max-values",
    "10,000 spans of 45 short attributes: 470,000 values (the value cap is 500,000)",
    max_request=True,
)
def _max_values(server: ServeProcess) -> Outcome:
    extra = {f"app.attribute_{n}": f"value {n}" for n in range(40)}
    spans = [chat_span(f"values-{n % 500}", n, extra=extra) for n in range(10_000)]
    body = deflated(trace_request(spans).SerializeToString())
    return answered(post(server, body, content_encoding="gzip"), 200)


@fault(
    "2",
    "max-json",
    "gzip inflating to 57 MiB of OTLP/JSON: 7,000 spans of 7.5 KB text",
    max_request=True,
)
def _max_json(server: ServeProcess) -> Outcome:
    body = deflated(otlp_json(trace_request(_text_spans("json", 7_000, 7_500))))
    return answered(post(server, body, JSON, content_encoding="gzip"), 200)


# --- case 8 ------------------------------------------------------------------------------------


def _connect(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=30)


@fault(
    "8",
    "idle-connections",
    "1,100 idle connections to OTLP/HTTP and 200 to gRPC under RLIMIT_NOFILE 1024, then an export",
    server="descriptors_1024",
)
def _idle_connections(server: ServeProcess) -> Outcome:
    idle = [_connect(server.http_port) for _ in range(1_100)]
    idle += [_connect(server.grpc_port) for _ in range(200)]
    try:
        export = post(server, trace_request([chat_span("after-the-flood")]).SerializeToString())
        health = server.client.get(f"{server.ops_url}/healthz").status_code
    finally:
        for sock in idle:
            sock.close()
    return Outcome(f"export {export.status_code}, /healthz {health}", export.status_code == 200)


HEADERS = b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\n"


@fault("8", "slow-headers", "50 connections sending their headers a byte at a time")
def _slow_headers(server: ServeProcess) -> Outcome:
    slow = [_connect(server.http_port) for _ in range(50)]
    try:
        deadline = time.monotonic() + 30
        closed: set[int] = set()
        for offset in range(len(HEADERS)):
            for number, sock in enumerate(slow):
                if number not in closed:
                    try:
                        sock.sendall(HEADERS[offset : offset + 1])
                    except OSError:
                        closed.add(number)
            if len(closed) == len(slow) or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        closed |= {n for n, sock in enumerate(slow) if n not in closed and closed_by_server(sock)}
    finally:
        for sock in slow:
            sock.close()
    return Outcome(f"{len(closed)} of 50 closed by the server", len(closed) == 50)


@fault("8", "lying-length", "Content-Length 1 MiB, then 10 bytes and silence")
def _lying_length(server: ServeProcess) -> Outcome:
    with _connect(server.http_port) as sock:
        sock.sendall(HEADERS + b"Content-Length: 1048576\r\n\r\n" + b"\x0a\x00" * 5)
        status = sock.recv(65536).split(b"\r\n", 1)[0].decode()
        closed = closed_by_server(sock)
    return Outcome(f"{status}, closed: {closed}", status.endswith("400 Bad Request") and closed)


# --- case 9 ------------------------------------------------------------------------------------


@fault("9", "deep-kvlist", "a span with a kvlist value nested 40 deep, beside a good span")
def _deep_kvlist(server: ServeProcess) -> Outcome:
    good = chat_span("deep-good").SerializeToString()
    body = spans_request(good, deep_span(chat_span("deep-bad"), 40, "kvlist"))
    response = post(server, body)
    outcome = answered(response, 200)
    outcome.expected &= "1 rejected" in outcome.text
    return outcome


@fault("9", "deep-json", "OTLP/JSON: an array value nested 2,000 deep, beside a good span")
def _deep_json(server: ServeProcess) -> Outcome:
    document = orjson.loads(otlp_json(trace_request([chat_span("j-good"), chat_span("j-bad")])))
    document["resourceSpans"][0]["scopeSpans"][0]["spans"][1]["attributes"].append("DEEP")
    text = orjson.dumps(document).decode()
    text = text.replace('"DEEP"', '{"key": "deep", "value": ' + deep_json_value(2_000) + "}")
    response = post(server, text.encode(), JSON)
    partial = orjson.loads(response.content).get("partialSuccess", {})
    return Outcome(
        f"{response.status_code}, {partial.get('rejectedSpans', 0)} rejected",
        response.status_code == 200 and partial.get("rejectedSpans") == "1",
    )


# --- case 10 -----------------------------------------------------------------------------------


def _rejected(server: ServeProcess, reason: str) -> float:
    return sum(
        value
        for (sample, labels), value in _counters(server).items()
        if sample == "turnwatch_otlp_requests_rejected_total" and ("reason", reason) in labels
    )


def _counted(server: ServeProcess, reason: str, before: float, what: str) -> Outcome:
    """`what` happened and was counted under `reason` (within 10 s), with no error logged."""
    deadline = time.monotonic() + 10
    while _rejected(server, reason) <= before and time.monotonic() < deadline:
        time.sleep(0.1)
    counted = _rejected(server, reason) > before
    errors = [line for line in server.logs().splitlines() if '"level": "error"' in line]
    text = f"{what}, {'counted' if counted else 'not counted'}, {len(errors)} error lines"
    return Outcome(text, counted and not errors)


@fault("10", "not-http", "a request line that is not HTTP")
def _not_http(server: ServeProcess) -> Outcome:
    before = _rejected(server, "malformed_http")
    with _connect(server.http_port) as sock:
        sock.sendall(b"NOT HTTP AT ALL\r\n\r\n")
        status = sock.recv(100).split(b"\r\n", 1)[0].decode()
    outcome = _counted(server, "malformed_http", before, status)
    outcome.expected &= status == "HTTP/1.1 400 Bad Request"
    return outcome


@fault("10", "gone-mid-body", "Content-Length 100,000, 100 bytes sent, connection closed")
def _gone_mid_body(server: ServeProcess) -> Outcome:
    before = _rejected(server, "client_disconnected")
    with _connect(server.http_port) as sock:
        sock.sendall(HEADERS + b"Content-Length: 100000\r\n\r\n" + b"\x0a" * 100)
    return _counted(server, "client_disconnected", before, "closed mid-body")


def _grpc_call(server: ServeProcess, body: bytes, **options: Any) -> str:
    with grpc.insecure_channel(
        server.grpc_endpoint, options=[("grpc.max_send_message_length", 128 * MiB)]
    ) as channel:
        try:
            channel.unary_unary(TRACES)(body, timeout=30, **options)
        except grpc.RpcError as error:
            return error.code().name
    return "OK"


@fault("10", "grpc-oversize", "a 70 MiB gRPC export (cap 64 MiB)")
def _grpc_oversize(server: ServeProcess) -> Outcome:
    body = trace_request([chat_span("big", extra={"blob": "b" * (70 * MiB)})]).SerializeToString()
    before = _rejected(server, "too_large")
    code = _grpc_call(server, body)
    outcome = _counted(server, "too_large", before, code)
    outcome.expected &= code == "RESOURCE_EXHAUSTED"
    return outcome


@fault("10", "grpc-metadata", "a gRPC export with 20 KiB of metadata (cap 16 KiB)")
def _grpc_metadata(server: ServeProcess) -> Outcome:
    body = trace_request([chat_span("meta")]).SerializeToString()
    before = _rejected(server, "headers_too_large")
    code = _grpc_call(server, body, metadata=(("x-padding", "p" * 20_000),))
    outcome = _counted(server, "headers_too_large", before, code)
    outcome.expected &= code == "RESOURCE_EXHAUSTED"
    return outcome


# --- case 11 -----------------------------------------------------------------------------------


@fault("11", "nested-cursor", "GET /api/incidents with a cursor of 5,000 nested brackets")
def _nested_cursor(server: ServeProcess) -> Outcome:
    cursor = base64.urlsafe_b64encode(b"[" * 5_000 + b"]" * 5_000).decode().rstrip("=")
    response = server.client.get(f"{server.ops_url}/api/incidents", params={"cursor": cursor})
    return Outcome(f"{response.status_code} {response.text}", response.status_code == 400)


@fault("11", "loose-ids", "OTLP/JSON spans with trace ids 0x..., -... and space-padded")
def _loose_ids(server: ServeProcess) -> Outcome:
    document = orjson.loads(otlp_json(trace_request([chat_span(f"id-{n}") for n in range(3)])))
    spans = document["resourceSpans"][0]["scopeSpans"][0]["spans"]
    loose = ["0x" + "ab" * 15, "-" + "1" * 31, " " + "ab" * 15 + " "]
    for span, trace_id in zip(spans, loose, strict=True):
        span["traceId"] = trace_id
    response = post(server, orjson.dumps(document), JSON)
    partial = orjson.loads(response.content).get("partialSuccess", {})
    return Outcome(
        f"{response.status_code}, {partial.get('rejectedSpans', 0)} rejected as invalid_id",
        partial.get("rejectedSpans") == "3" and "invalid_id" in partial.get("errorMessage", ""),
    )


# --- case 12 -----------------------------------------------------------------------------------


@fault(
    "12",
    "junk-services",
    "300 sessions of made-up services, then 3 services with 5 sessions each",
    server="scoring",
)
def _junk_services(server: ServeProcess) -> Outcome:
    if post(server, flood_request(0, 300)).status_code != 200:
        return Outcome("the junk was refused", False)
    real = ExportTraceServiceRequest(
        resource_spans=[
            ResourceSpans(
                resource=Resource(attributes=key_values({"service.name": service})),
                scope_spans=[ScopeSpans(spans=[chat_span(f"{service}-{n}")])],
            )
            for service in ("billing-bot", "support-bot", "travel-bot")
            for n in range(5)
        ]
    )
    if post(server, real.SerializeToString()).status_code != 200:
        return Outcome("the real services were refused", False)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        scored = {
            dict(labels)["service"]: value
            for (name, labels), value in server.counters().items()
            if name == "turnwatch_sessions_scored_total"
        }
        if sum(scored.values()) >= 315:
            break
        time.sleep(1)
    expected = {"billing-bot", "support-bot", "travel-bot", "other"}
    return Outcome(f"`service` values: {sorted(scored)}", set(scored) == expected)


# --- running -----------------------------------------------------------------------------------


def _rejections(before: dict, after: dict) -> dict[str, float]:
    moved: dict[str, float] = {}
    for key, value in after.items():
        name, labels = key
        if name in REJECTION_COUNTERS and value != before.get(key, 0.0):
            label = dict(labels)
            where = label.get("transport") or label.get("signal") or "ops"
            moved[f"{where}:{label['reason']}"] = value - before.get(key, 0.0)
    return moved


def run_faults(names: list[str] | None = None) -> list[Row]:
    chosen = [f for f in FAULTS if names is None or f.name in names]
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="turnwatch-faults-") as workdir:
        for server_name, (settings, descriptor_limit) in SERVERS.items():
            faults = [f for f in chosen if f.server == server_name]
            if not faults:
                continue
            server = ServeProcess(Path(workdir) / server_name, settings, descriptor_limit)
            try:
                for item in faults:
                    rows.append(_run_one(server, item))
            finally:
                server.stop()
    return rows


def _counters(server: ServeProcess) -> dict:
    try:
        return server.counters()
    except httpx.HTTPError:  # a stalled server's /metrics: the /healthz columns say so
        return {}


def _run_one(server: ServeProcess, item: Fault) -> Row:
    before = _counters(server)
    start_rss = server.reset_peak()
    with HealthWatch(server.ops_url) as health:
        try:
            outcome = item.run(server)
        except Exception as error:  # a fault that breaks the harness is a row, not a crash
            outcome = Outcome(f"{type(error).__name__}: {error}"[:120], False)
    growth = server.peak_growth_mib(start_rss)
    moved = _rejections(before, _counters(server))
    return Row(item, outcome, health.worst, health.failures, growth, moved)


def print_table(rows: list[Row]) -> None:
    print(
        "| case | fault | sent | outcome | as expected | worst /healthz ms | missed /healthz "
        "| peak RSS growth MiB | counters |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        counters = ", ".join(f"{name} +{value:g}" for name, value in sorted(row.counters.items()))
        print(
            f"| {row.fault.case} | {row.fault.name} | {row.fault.sent} | {row.outcome.text} "
            f"| {'yes' if row.outcome.expected else 'NO'} | {row.worst_healthz * 1000:.0f} "
            f"| {row.missed_healthz} | {row.peak_growth_mib:.0f} | {counters or '-'} |"
        )
    worst = max(row.worst_healthz for row in rows)
    largest = max((row.peak_growth_mib for row in rows if row.fault.max_request), default=0.0)
    bound = HEALTHZ_BOUND_SECONDS * 1000
    print(
        f"\nworst /healthz latency {worst * 1000:.0f} ms (bound {bound:.0f});"
        f" largest peak RSS growth for a maximum-size request {largest:.0f} MiB (bound "
        f"{MEMORY_BOUND_MIB}); {sum(not row.outcome.expected for row in rows)} unexpected outcomes"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", help="fault names to run (default: all)")
    parser.add_argument("--list", action="store_true", help="list the faults and exit")
    args = parser.parse_args()
    if args.list:
        for item in FAULTS:
            print(f"{item.case:>3}  {item.name:18s} {item.sent}")
        return 0
    rows = run_faults(args.only)
    print_table(rows)
    return 0 if all(row.outcome.expected for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
