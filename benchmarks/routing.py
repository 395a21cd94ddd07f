"""The distributed layout's CPU cost per span, in process, against the embedded collector.

Three measurements on the same kind of OTLP requests (benchmarks/ingest.py's: 512 GenAI chat
spans each, about 1 KB of message text per span, conversations of 8 calls closed by an end
marker), each on inputs no other measurement of the run has seen:

- embedded: decode, sessionize, sample (rate 1.0) and assemble, as `turnwatch serve` does;
- collector (route): decode and route, i.e. parse message content, serialise and seal each
  request's observations (`routing.mode: route`), without the Kafka client;
- sessionizer: open and validate those sealed records and sessionize, sample and assemble them
  (the sessionizer role), without the Kafka client.

De-identification is left out of all three (benchmarks/deid.py measures it; it costs the same
per session in either layout). Rounds alternate the order. Prints spans per CPU-second
(`time.process_time`, this process only) and each figure's ratio to embedded in the same round.

    python benchmarks/routing.py [--requests 12] [--rounds 4]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

from prometheus_client import CollectorRegistry
from turnwatch.collector.config import CollectorConfig
from turnwatch.collector.deid.secret import session_id_key
from turnwatch.collector.intake import ObservationIntake
from turnwatch.collector.metrics import CollectorMetrics
from turnwatch.collector.observations import ObservationCodec
from turnwatch.collector.otlp_common import DecodeLimits
from turnwatch.collector.otlp_proto import decode_traces
from turnwatch.collector.pipeline import CollectorPipeline, PendingSession, SessionBuilder
from turnwatch.collector.router import ObservationRouter
from turnwatch.collector.sealing import Sealer

from turnwatch.bus.ledger import OffsetLedger
from turnwatch.bus.records import OBSERVATIONS, ObservationRecord

# Appended, not prepended: the installed `turnwatch` (which maps collector/ into it) must win
# over the repository's own `turnwatch/` folder.
sys.path.append(str(Path(__file__).resolve().parent.parent))

from benchmarks.otlp_load import SPANS_PER_REQUEST, Load

PARTITIONS = 6
SECRET = b"benchmark-deployment-secret-0123456789"
CODEC = ObservationCodec(Sealer(SECRET))
ID_KEY = session_id_key(SECRET)
LIMITS = DecodeLimits()


class Assembled:
    """The stage after the pipeline: assembles each closed, sampled session and counts it."""

    def __init__(self, config: CollectorConfig, metrics: CollectorMetrics) -> None:
        self.build = SessionBuilder(config.service_fallback, metrics, ID_KEY)
        self.sessions = 0

    def offer(self, pending: PendingSession) -> None:
        self.build(pending)
        pending.settle()
        self.sessions += 1

    def overloaded(self) -> bool:
        return False


def pipeline(ledger: OffsetLedger | None = None, routed: bool = False):
    config = CollectorConfig.model_validate({"routing": {"queue_size": 1_000_000}})
    metrics = CollectorMetrics(CollectorRegistry())
    stage = Assembled(config, metrics)
    router = None
    if routed:

        async def unused(topic, key, record) -> None:
            raise AssertionError("the benchmark reads the queue")

        router = ObservationRouter(config.routing, CODEC, metrics, unused)
    return CollectorPipeline(config, metrics, stage, router=router, ledger=ledger), stage


def embedded(bodies: list[bytes]) -> tuple[float, int]:
    built, stage = pipeline()
    started = time.process_time()
    for body in bodies:
        built.accept_spans(decode_traces(body, LIMITS).items)
    built.close_all()
    return time.process_time() - started, stage.sessions


def route(bodies: list[bytes]) -> tuple[float, list[tuple[str, ObservationRecord]]]:
    built, _ = pipeline(routed=True)
    assert built.router is not None
    queue = built.router.queue
    records = []
    started = time.process_time()
    for body in bodies:
        built.accept_spans(decode_traces(body, LIMITS).items)
        while not queue.empty():
            key, record, _ = queue.get_nowait()
            records.append((key, record))
    return time.process_time() - started, records


def sessionize(records: list[tuple[str, ObservationRecord]]) -> tuple[float, int, int]:
    """(CPU seconds, sessions built, bytes the sessionizer held before closing them)."""
    ledger = OffsetLedger()
    ledger.assign((OBSERVATIONS, partition) for partition in range(PARTITIONS))
    built, stage = pipeline(ledger)

    async def unused(topic, key, record) -> None:
        raise AssertionError("no trace-routed spans in these requests")

    intake = ObservationIntake(built, CODEC, ledger, unused, built.config.routing)

    async def feed() -> None:
        for offset, (key, record) in enumerate(records):
            ledger.begin(OBSERVATIONS, int(key, 16) % PARTITIONS, offset)
            await intake.handle(OBSERVATIONS, record)
            ledger.end()

    started = time.process_time()
    asyncio.run(feed())
    held = built.sessionizer.buffered_bytes
    built.close_all()
    return time.process_time() - started, stage.sessions, held


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=12)
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()
    spans = args.requests * SPANS_PER_REQUEST
    rates: dict[str, list[float]] = {"embedded": [], "collector (route)": [], "sessionizer": []}
    ratios: dict[str, list[float]] = {"collector (route)": [], "sessionizer": []}
    for number in range(args.rounds):
        # Each round's two loads get keys of their own, so no phase reopens another's sessions.
        first = Load(f"round{number}-a", seed=1_000 + 2 * number).requests(args.requests)
        second = Load(f"round{number}-b", seed=1_001 + 2 * number).requests(args.requests)
        order = ("embedded", "distributed") if number % 2 == 0 else ("distributed", "embedded")
        measured: dict[str, float] = {}
        for which, bodies in zip(order, (first, second), strict=True):
            if which == "embedded":
                seconds, sessions = embedded(bodies)
                measured["embedded"] = spans / seconds
            else:
                routing_seconds, records = route(bodies)
                sessionizing_seconds, sessions, _ = sessionize(records)
                measured["collector (route)"] = spans / routing_seconds
                measured["sessionizer"] = spans / sessionizing_seconds
            assert sessions == spans // 8, sessions
        for name, value in measured.items():
            rates[name].append(value)
        for name in ratios:
            ratios[name].append(measured[name] / measured["embedded"])
    print(f"{args.rounds} rounds, {spans} spans per measurement, alternating order, new inputs")
    print(f"{'stage':<20} {'spans/CPU-s (median)':>22} {'min':>9} {'max':>9} {'x embedded':>11}")
    for name, values in rates.items():
        ratio = statistics.median(ratios[name]) if name in ratios else 1.0
        print(
            f"{name:<20} {statistics.median(values):>22,.0f} {min(values):>9,.0f} "
            f"{max(values):>9,.0f} {ratio:>11.2f}"
        )


if __name__ == "__main__":
    main()
