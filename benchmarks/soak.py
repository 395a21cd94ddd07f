"""Soak: `turnwatch serve` (all roles, embedded bus, de-identification on) under steady load.

A scripted support chatbot sends conversations through the real OTel SDK (OTLP/HTTP protobuf) at
a fixed rate: a mix of healthy ones and ones that break the shipped contract (unapproved refund,
forbidden account deletion), with names, e-mail addresses and order numbers that change every
time, so de-identification analyses new text and spaCy meets new words all along. Every 30 s it
prints the server's resident memory and its counters; at the end a table: start / peak / end RSS,
sessions sent, de-identified, scored, and every drop or refusal. RSS is reported, not asserted.

    python benchmarks/soak.py [--minutes 10] [--rate 4]

Not run in CI (it takes as long as it is told to).
"""

from __future__ import annotations

import argparse
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter  # noqa: E402
from opentelemetry.sdk.trace.export import BatchSpanProcessor  # noqa: E402
from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

from tests.otel_chatbot import Exchange, provider_with, run_conversation  # noqa: E402

FIRST = ["Maria", "John", "Aiko", "Pierre", "Fatima", "Liam", "Chen", "Olga", "Ravi", "Sofia"]
LAST = ["Garcia", "Smith", "Tanaka", "Dubois", "Khan", "Murphy", "Wei", "Ivanova", "Patel"]
REPORT_SECONDS = 30.0


def conversation(rng: random.Random, number: int) -> tuple[str, list[Exchange]]:
    """One conversation: 60 % healthy, 20 % unapproved refund, 20 % forbidden deletion."""
    name = f"{rng.choice(FIRST)} {rng.choice(LAST)}"
    email = f"{name.split()[0].lower()}.{rng.randrange(10_000)}@example.org"
    order = str(rng.randrange(100_000, 999_999))
    opening = Exchange(
        user=f"Hi, I am {name} ({email}). Where is my order {order}?",
        answer=f"Thanks {name.split()[0]}, order {order} ships tomorrow.",
        tool="lookup_order",
        tool_arguments={"order_id": order},
        tool_result={"status": "packed", "customer": name},
    )
    kind = rng.random()
    if kind < 0.6:
        closing = Exchange(
            user="Great, thanks a lot.",
            answer="Glad I could help; the ticket is closed.",
            tool="record_resolution",
            tool_arguments={"outcome": "resolved"},
            tool_result={"ok": True},
        )
        return "healthy", [opening, closing]
    if kind < 0.8:
        refund = Exchange(
            user=f"It arrived broken, refund order {order} please.",
            answer="Done, 30 EUR refunded.",
            tool="issue_refund",
            tool_arguments={"order_id": order, "amount": 30},
            tool_result={"status": "paid"},
        )
        return "refund", [opening, refund]
    deletion = Exchange(
        user=f"Delete everything you hold about {email}.",
        answer="Your account data is deleted.",
        tool="delete_account_data",
        tool_arguments={"email": email},
        tool_result={"deleted": True},
    )
    return "delete", [opening, deletion]


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def counters(ops: str) -> dict[str, float]:
    """The soak's view of /metrics: a few totals, labels summed."""
    wanted = {
        "turnwatch_spans_received_total": "spans",
        "turnwatch_deid_sessions_total": "deidentified",
        "turnwatch_deid_sessions_quarantined_total": "quarantined",
        "turnwatch_handoff_dropped_total": "handoff_dropped",
        "turnwatch_otlp_requests_rejected_total": "otlp_rejected",
        "turnwatch_sessions_open": "open",
        "turnwatch_bus_records_rejected_total": "bus_rejected",
        "turnwatch_bus_spool_full_total": "bus_full",
    }
    totals = dict.fromkeys(wanted.values(), 0.0)
    totals["scored"] = 0.0
    text = httpx.get(f"{ops}/metrics", timeout=10).text
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name in wanted:
                totals[wanted[sample.name]] += sample.value
            elif (
                sample.name == "turnwatch_bus_records_consumed_total"
                and sample.labels.get("topic") == "turnwatch.scores"
                and sample.labels.get("outcome") == "processed"
            ):
                totals["scored"] += sample.value
    return totals


@dataclass
class Soak:
    minutes: float
    rate: float
    seed: int = 7
    samples: list[tuple[float, float]] = field(default_factory=list)
    sent: dict[str, int] = field(default_factory=dict)

    def start_server(self, data_dir: Path) -> tuple[subprocess.Popen[str], str, str]:
        env = {
            **os.environ,
            "TURNWATCH_SCORERS__CONTRACTS_DIR": str(ROOT / "deploy" / "contracts"),
            "TURNWATCH_SESSIONS__IDLE_TIMEOUT_SECONDS": "2",
            "TURNWATCH_LOG__LEVEL": "WARNING",  # one line per session at INFO
        }
        process = subprocess.Popen(
            [
                *(sys.executable, "-m", "turnwatch", "serve", "--data-dir", str(data_dir)),
                *("--otlp-port", "0", "--grpc-port", "0", "--ops-port", "0"),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            cwd=ROOT,
            env=env,
        )
        assert process.stdout is not None
        banner = process.stdout.readline()
        http, _grpc, ops = (int(port) for port in re.findall(r":(\d+)", banner)[:3])
        return process, f"http://127.0.0.1:{http}", f"http://127.0.0.1:{ops}"

    def report(self, pid: int, ops: str, started: float) -> dict[str, float]:
        rss = rss_mib(pid)
        self.samples.append((time.monotonic() - started, rss))
        now = counters(ops)
        drops = now["handoff_dropped"] + now["quarantined"] + now["bus_rejected"]
        print(
            f"{time.monotonic() - started:7.0f} s  rss {rss:7.1f} MiB  "
            f"sent {sum(self.sent.values()):6d}  deidentified {now['deidentified']:6.0f}  "
            f"scored {now['scored']:6.0f}  open {now['open']:4.0f}  drops {drops:.0f}  "
            f"503s {now['otlp_rejected']:.0f}",
            flush=True,
        )
        return now

    def run(self) -> int:
        rng = random.Random(self.seed)
        with tempfile.TemporaryDirectory(prefix="turnwatch-soak-") as directory:
            process, otlp, ops = self.start_server(Path(directory))
            provider = provider_with(
                BatchSpanProcessor(
                    OTLPSpanExporter(endpoint=f"{otlp}/v1/traces"), schedule_delay_millis=500
                )
            )
            started = time.monotonic()
            idle_rss = rss_mib(process.pid)
            print(f"turnwatch serve pid {process.pid}, idle RSS {idle_rss:.1f} MiB", flush=True)
            self.report(process.pid, ops, started)
            interval = 1.0 / self.rate
            deadline = started + self.minutes * 60
            next_send = next_report = started
            number = 0
            try:
                while time.monotonic() < deadline:
                    now = time.monotonic()
                    if now >= next_report + REPORT_SECONDS:
                        next_report += REPORT_SECONDS
                        self.report(process.pid, ops, started)
                    if now < next_send:
                        time.sleep(min(next_send - now, 0.05))
                        continue
                    kind, exchanges = conversation(rng, number)
                    run_conversation(provider, f"soak-{number}", exchanges, user_id=f"u{number}")
                    self.sent[kind] = self.sent.get(kind, 0) + 1
                    number += 1
                    next_send += interval
                provider.shutdown()
                # Let the last sessions go idle, close and flow through the scorer.
                settle = time.monotonic() + 60
                final = self.report(process.pid, ops, started)
                while final["scored"] < number and time.monotonic() < settle:
                    time.sleep(2)
                    final = counters(ops)
                final = self.report(process.pid, ops, started)
            finally:
                process.send_signal(signal.SIGTERM)
                code = process.wait(60)
        self.table(idle_rss, final, number, code)
        return 0 if code == 0 else 1

    def table(self, idle_rss: float, final: dict[str, float], sent: int, code: int) -> None:
        rss = [value for _, value in self.samples]
        warm = rss[1] if len(rss) > 1 else rss[0]
        rows = [
            ("duration", f"{self.minutes:g} min at {self.rate:g} conversations/s"),
            ("RSS idle (after start-up)", f"{idle_rss:.1f} MiB"),
            ("RSS after 30 s of load", f"{warm:.1f} MiB"),
            ("RSS peak", f"{max(rss):.1f} MiB"),
            ("RSS end", f"{rss[-1]:.1f} MiB"),
            (
                "conversations sent",
                f"{sent} ({', '.join(f'{k} {v}' for k, v in self.sent.items())})",
            ),
            ("spans received", f"{final['spans']:.0f}"),
            ("sessions de-identified", f"{final['deidentified']:.0f}"),
            ("sessions scored (exporter)", f"{final['scored']:.0f}"),
            ("quarantined (de-identification)", f"{final['quarantined']:.0f}"),
            ("handoff drops", f"{final['handoff_dropped']:.0f}"),
            ("bus rejections", f"{final['bus_rejected']:.0f}"),
            ("OTLP 503 answers", f"{final['otlp_rejected']:.0f}"),
            ("exit code on SIGTERM", str(code)),
        ]
        width = max(len(label) for label, _ in rows)
        print()
        print(f"| {'soak'.ljust(width)} | result |")
        print(f"|{'-' * (width + 2)}|--------|")
        for label, value in rows:
            print(f"| {label.ljust(width)} | {value} |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10.0, help="load duration")
    parser.add_argument("--rate", type=float, default=4.0, help="conversations per second")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    return Soak(args.minutes, args.rate, args.seed).run()


if __name__ == "__main__":
    sys.exit(main())
