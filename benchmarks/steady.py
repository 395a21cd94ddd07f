"""Steady state: 100 k closed sessions through the default configuration, throughput per 10 k.

Fast for an hour, not only for a minute: the collector (receivers, decoders, sessionizer, sampler
at its default rate 1.0, session assembly; every default setting, including the one-hour reopen
window that keeps closed sessions' content) runs in a subprocess and takes blocks of about 10 k
conversations (8 GenAI chat calls of about 1 KB of text each, the last with the end marker,
512 spans per request, every key new), posted over loopback; a 503 is retried. Each block prints
the server's spans per CPU-second (CPU time from /proc), wall throughput, RSS, the buffer gauge
(`turnwatch_session_buffer_bytes`) and the 503s.

A reference server with `sessions.reopen_window_seconds: 0` (nothing kept after close) takes the
same kind of blocks, alternating with the default one (which of the two goes first swaps every
block), so the cost of keeping content is read as a ratio measured under the same load.

    python benchmarks/steady.py [--sessions 100000] [--block 10000] [--clients 2] [--no-reference]
                                [--set sessions.KEY=VALUE ...]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.otlp_load import (
    CALLS_PER_CONVERSATION,
    SPANS_PER_REQUEST,
    Load,
    TurnwatchServer,
    post_all,
)
from turnwatch import collector

MiB = 1024 * 1024


@dataclass
class Block:
    sessions: int
    spans_per_cpu_s: float
    spans_per_s: float
    rss_mib: float
    buffer_mib: float
    retries: int


class Feed:
    """One server and the load it gets: every block new conversations, counted to the end."""

    def __init__(self, name: str, overrides: dict[str, object], seed: int) -> None:
        self.name = name
        self.server = TurnwatchServer(overrides)
        self.load = Load(f"steady-{name}", seed)
        self.closed = 0
        self.blocks: list[Block] = []

    def run_block(self, requests: int, clients: int) -> Block:
        bodies = self.load.requests(requests)
        sessions = requests * SPANS_PER_REQUEST // CALLS_PER_CONVERSATION
        cpu = self.server.cpu_seconds()
        started = time.perf_counter()
        posted = post_all(self.server.http_port, bodies, clients)
        self.closed += sessions
        self.server.settle(self.closed)
        spans = requests * SPANS_PER_REQUEST
        block = Block(
            sessions=self.closed,
            spans_per_cpu_s=spans / (self.server.cpu_seconds() - cpu),
            spans_per_s=spans / (time.perf_counter() - started),
            rss_mib=self.server.rss_mib(),
            buffer_mib=self.server.metric("turnwatch_session_buffer_bytes") / MiB,
            retries=posted.retries,
        )
        self.blocks.append(block)
        return block


def parse_overrides(items: list[str]) -> dict[str, object]:
    overrides: dict[str, object] = {}
    for item in items:
        key, _, value = item.partition("=")
        overrides[key] = json.loads(value) if value[:1] in "0123456789[{-tfn" else value
    return overrides


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=100_000)
    parser.add_argument("--block", type=int, default=10_000, help="sessions per printed row")
    parser.add_argument("--clients", type=int, default=2)
    parser.add_argument("--no-reference", action="store_true", help="the default server only")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args()

    sessions_per_request = SPANS_PER_REQUEST // CALLS_PER_CONVERSATION
    requests = math.ceil(args.block / sessions_per_request)
    blocks = math.ceil(args.sessions / (requests * sessions_per_request))
    feeds = [Feed("default", parse_overrides(args.set), seed=11)]
    if not args.no_reference:
        overrides = parse_overrides(args.set) | {"sessions.reopen_window_seconds": 0}
        feeds.append(Feed("no-reopen", overrides, seed=12))
    print(
        f"steady: {blocks} blocks of {requests} requests x {SPANS_PER_REQUEST} spans "
        f"({requests * sessions_per_request} sessions of {CALLS_PER_CONVERSATION} calls), "
        f"{args.clients} client threads, {os.cpu_count()} cores, {collector.BUILD}; "
        f"servers: {', '.join(feed.name for feed in feeds)} (alternating)"
    )
    header = (
        f"{'server':<11}{'closed':>9}{'spans/CPU-s':>13}{'vs block 1':>11}{'spans/s':>9}"
        f"{'RSS MiB':>9}{'buffer MiB':>11}{'503s':>6}"
    )
    print(header)
    try:
        for feed in feeds:
            feed.run_block(1, args.clients)  # warm-up, not reported
        for number in range(blocks):
            order = feeds if number % 2 == 0 else feeds[::-1]
            for feed in order:
                block = feed.run_block(requests, args.clients)
                first = feed.blocks[1].spans_per_cpu_s if len(feed.blocks) > 1 else float("nan")
                print(
                    f"{feed.name:<11}{block.sessions:>9,}{block.spans_per_cpu_s:>13,.0f}"
                    f"{block.spans_per_cpu_s / first:>11.2f}{block.spans_per_s:>9,.0f}"
                    f"{block.rss_mib:>9.0f}{block.buffer_mib:>11.1f}{block.retries:>6}",
                    flush=True,
                )
        peaks = [feed.server.peak_rss_mib() for feed in feeds]
    finally:
        for feed in feeds:
            feed.server.stop()
    for feed, peak in zip(feeds, peaks, strict=True):
        rates = [block.spans_per_cpu_s for block in feed.blocks[1:]]
        print(
            f"{feed.name}: last block / first = {rates[-1] / rates[0]:.2f}, median of the last "
            f"three / first = {statistics.median(rates[-3:]) / rates[0]:.2f} (goal >= 0.8), "
            f"peak RSS {peak:.0f} MiB"
        )
    if len(feeds) == 2:
        # Blocks run back to back in alternation, so each pair saw the same machine speed.
        pairs = [
            a.spans_per_cpu_s / b.spans_per_cpu_s
            for a, b in zip(feeds[0].blocks[1:], feeds[1].blocks[1:], strict=True)
        ]
        print(
            f"default / no-reopen, per block pair: {' '.join(f'{r:.2f}' for r in pairs)}; "
            f"median {statistics.median(pairs):.2f}"
        )


if __name__ == "__main__":
    main()
