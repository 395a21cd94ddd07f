"""Full pipeline speed: messages per second through a running turnwatch (every role: receiver,
sessionizer, sampler, de-identification, checks, the heuristic judge, exporters) next to
Presidio's default analyzer on the same distinct messages.

    python benchmarks/pipeline.py [--seed 3] [--rounds 4] [--sessions 16] [--messages 16]
                                  [--chars 500] [--warmup 1]

Messages are about `--chars` characters each, joined from the distinct labelled texts of the
PII corpus (`benchmarks/pii/`), so no message repeats and each carries several labelled values;
a session is `--messages` of them, user and assistant in turn. Every round makes new sessions
and gives the same messages to each side, the sides rotating which goes first. The `--warmup`
rounds come first, on messages of their own, and are not counted: each side's first calls load
what it loads lazily (phone metadata, compiled patterns, spaCy's first batches), once per
de-identification worker process, which is no part of the steady state that sizing is about:

- presidio: `AnalyzerEngine` (predefined recognizers, the same spaCy model) and
  `AnonymizerEngine`, one call per message in this process (`benchmarks/deid.py`'s `Presidio`).
- turnwatch, `deid.workers` 1 and the container's cores: `turnwatch.app.serve.run` (the
  embedded bus, real ports) in this process; the round's OTLP/HTTP protobuf bodies (the real SDK
  spans, encoded before the clock starts) are posted to it and the clock stops when the exporter
  has the last session's score record.

Wall seconds are from the first request to the last record; CPU seconds are this process and
its children (the de-identification workers) together, so the client's requests count against
turnwatch. Two ratios to Presidio: messages per wall second (what issue 18's target compares:
turnwatch with its workers on every core against Presidio's analyzer, which uses one) and
messages per CPU-second (the work per message, whatever else runs on the machine; on a shared
machine the wall ratio moves with the load, since a busy core slows the single-threaded
Presidio and a worker alike but only turnwatch could have used the idle one; the header gives
the load average's range over the run, and for the worker processes their CPU apart from the
serving process's). Value recall:
labelled values that appear nowhere in the de-identified output (the sessions published on the
bus; Presidio's anonymized texts), as `benchmarks/pii/score.py` looks for them.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from turnwatch.collector.deid.config import DeidConfig
from turnwatch.collector.deid.deidentifier import QuarantineReason
from turnwatch.collector.deid.workers import container_cores

from benchmarks.corpus.emit import Emitter
from benchmarks.deid import Presidio
from benchmarks.deid_leaks import SERVICE, Recorder, corpus_conversation, strings
from benchmarks.pii.generate import make_corpus
from benchmarks.pii.model import LabelledConversation, LabelledText, LabelledTurn
from benchmarks.pii.score import needle, occurs
from turnwatch.app.serve import BackgroundService
from turnwatch.app.settings import load_settings

SECRET = "pipeline-benchmark-secret-0123456789"
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def messages(texts: list[LabelledText], chars: int) -> list[LabelledText]:
    """Consecutive corpus texts joined into messages of at least `chars` characters."""
    out: list[LabelledText] = []
    current = LabelledText()
    for text in texts:
        if current.text:
            current.say(separator(current.text, text.text))
        shift = len(current.text)
        current.say(text.text)
        current.occurrences += [
            replace(item, start=item.start + shift, end=item.end + shift)
            for item in text.occurrences
        ]
        if len(current.text) >= chars:
            current.check()
            out.append(current)
            current = LabelledText()
    return out


def separator(before: str, after: str) -> str:
    """Sentences run on; a text of several lines (a signature, an address) is a paragraph."""
    if "\n" in before or "\n" in after:
        return "\n\n"
    return " " if before.rstrip()[-1:] in ".!?" else ". "


def conversations(
    items: list[LabelledText], per_session: int, round_number: int
) -> list[LabelledConversation]:
    out = []
    for start in range(0, len(items) - per_session + 1, per_session):
        turns = [
            LabelledTurn("user" if offset % 2 == 0 else "assistant", text)
            for offset, text in enumerate(items[start : start + per_session])
        ]
        number = start // per_session
        out.append(LabelledConversation(f"pipe-{round_number}-{number}", f"cust-{number}", turns))
    return out


def request_bodies(talks: list[LabelledConversation]) -> list[bytes]:
    """Each conversation's spans as one OTLP/HTTP protobuf body, as the SDK's exporter sends."""
    spans = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": SERVICE}))
    provider.add_span_processor(SimpleSpanProcessor(spans))
    emitter = Emitter({SERVICE: provider})
    bodies = []
    for talk in talks:
        emitter.emit(corpus_conversation(talk))
        bodies.append(encode_spans(spans.get_finished_spans()).SerializeToString())
        spans.clear()
    provider.shutdown()
    return bodies


def tree_cpu_seconds() -> float:
    """CPU seconds of this process and its live descendants (the de-identification workers)."""
    return time.process_time() + children_cpu_seconds()


def children_cpu_seconds() -> float:
    """CPU seconds of this process's live descendants."""
    parents: dict[int, int] = {}
    times: dict[int, float] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(entry.name)] = int(fields[1])
        times[int(entry.name)] = (int(fields[11]) + int(fields[12])) / CLOCK_TICKS
    own = {os.getpid()}
    grew = True
    while grew:
        more = {pid for pid, parent in parents.items() if parent in own} - own
        own |= more
        grew = bool(more)
    return sum(times[pid] for pid in own if pid != os.getpid())


class Turnwatch:
    def __init__(self, workers: int, workdir: str) -> None:
        self.recorder = Recorder()
        settings = load_settings(
            None,
            {
                "otlp.http_port": 0, "otlp.grpc_port": 0, "ops.port": 0,
                "data_dir": workdir,
                "deid.secret": SECRET,
                "deid.workers": workers,
                # The 10 s default is for a stuck session; on a loaded shared machine a
                # session queued behind another can take that long and would never be scored.
                "deid.session_time_limit_seconds": 300,
                "log.level": "WARNING",
            },
        )  # fmt: skip
        self.background = BackgroundService(settings, self.recorder.compose)
        service = self.background.start(timeout=300)
        self.registry = service.registry
        self.url = f"http://127.0.0.1:{service.ports.otlp_http}/v1/traces"
        self.client = httpx.Client(timeout=60)
        self._scored: set[str] = set()
        self._read = 0

    def scored(self) -> int:
        """Sessions with a score record so far; reads only the records added since last time."""
        end = len(self.recorder.records)  # the server's thread appends while this reads
        for topic, record in self.recorder.records[self._read : end]:
            if topic == "turnwatch.scores":
                self._scored.add(record["session_id"])
        self._read = end
        return len(self._scored)

    def quarantined(self) -> dict[str, float | None]:
        return {
            reason: self.registry.get_sample_value(
                "turnwatch_deid_sessions_quarantined_total", {"reason": reason}
            )
            for reason in QuarantineReason.ALL
        }

    def run(self, bodies: list[bytes], timeout: float = 600) -> str:
        """Post the bodies, wait for every session's score record; the published sessions.

        The wait runs in this process beside turnwatch and its CPU counts against turnwatch,
        so it looks only at new records every 10 ms and reads the registry (which collects
        every metric) twice a second: polling the registry every 10 ms took about a fifth of
        the parent process's CPU."""
        first = len(self.recorder.records)
        want = self.scored() + len(bodies)
        headers = {"Content-Type": "application/x-protobuf"}
        for body in bodies:
            while self.client.post(self.url, content=body, headers=headers).status_code != 200:
                time.sleep(0.05)  # 429/503: the pipeline is full, as a client would retry
        deadline = time.monotonic() + timeout
        next_check = 0.0
        while self.scored() < want:
            if time.monotonic() >= next_check:
                quarantined = self.quarantined()
                if any(quarantined.values()):
                    raise RuntimeError(f"sessions quarantined, by reason: {quarantined}")
                next_check = time.monotonic() + 0.5
            if time.monotonic() > deadline:
                raise RuntimeError(f"{want - self.scored()} sessions not scored in {timeout} s")
            time.sleep(0.01)
        if any(self.quarantined().values()):
            raise RuntimeError(f"sessions quarantined, by reason: {self.quarantined()}")
        published = [r for t, r in self.recorder.records[first:] if t == "turnwatch.sessions"]
        return "\n".join(strings(published))

    def stop(self) -> None:
        self.client.close()
        self.background.stop()


def value_recall(items: list[LabelledText], output: str) -> tuple[int, int]:
    needles = [needle(text.text, item) for text in items for item in text.occurrences]
    return sum(not occurs(value, output) for value in needles), len(needles)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--sessions", type=int, default=16, help="sessions per round")
    parser.add_argument("--messages", type=int, default=16, help="messages per session")
    parser.add_argument("--chars", type=int, default=500, help="characters per message")
    parser.add_argument(
        "--warmup", type=int, default=1, help="uncounted rounds first, on messages of their own"
    )
    args = parser.parse_args(argv)
    per_round = args.sessions * args.messages
    rounds = args.warmup + args.rounds
    needed = rounds * per_round * (args.chars // 40 + 2)
    joined = messages(make_corpus(args.seed, texts=needed, conversations=0).texts, args.chars)
    if len(joined) < rounds * per_round:
        raise SystemExit(f"the corpus made {len(joined)} messages, fewer than needed")
    cores = container_cores()
    names = ["presidio", "turnwatch workers=1", f"turnwatch workers={cores}"]
    totals = {
        name: {"wall": 0.0, "cpu": 0.0, "workers_cpu": 0.0, "removed": 0, "values": 0}
        for name in names
    }
    presidio = Presidio(DeidConfig().model)
    loads = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory(prefix="turnwatch-pipeline-") as workdir:
        servers = {
            names[1]: Turnwatch(1, f"{workdir}/one"),
            names[2]: Turnwatch(cores, f"{workdir}/all"),
        }
        try:
            for number in range(rounds):
                counted = number >= args.warmup
                items = joined[number * per_round : (number + 1) * per_round]
                talks = conversations(items, args.messages, number)
                bodies = request_bodies(talks)
                order = names[number % 3 :] + names[: number % 3]
                for name in order:
                    wall, cpu = time.perf_counter(), tree_cpu_seconds()
                    workers_cpu = children_cpu_seconds()
                    if name == "presidio":
                        output = "\n".join(presidio.run(item.text)[1] for item in items)
                    else:
                        output = servers[name].run(bodies)
                    if not counted:
                        continue
                    totals[name]["wall"] += time.perf_counter() - wall
                    totals[name]["cpu"] += tree_cpu_seconds() - cpu
                    totals[name]["workers_cpu"] += children_cpu_seconds() - workers_cpu
                    removed, values = value_recall(items, output)
                    totals[name]["removed"] += removed
                    totals[name]["values"] += values
                loads.append(os.getloadavg()[0])
                kind = "round" if counted else "warm-up round (not counted)"
                print(f"{kind} {number + 1}/{rounds} done", file=sys.stderr)
        finally:
            for server in servers.values():
                server.stop()
    report(totals, args, cores, loads)
    return 0


def report(
    totals: dict[str, dict[str, Any]], args: argparse.Namespace, cores: int, loads: list[float]
) -> None:
    count = args.rounds * args.sessions * args.messages
    print(
        f"{count} distinct messages of about {args.chars} characters, {args.rounds} rounds of "
        f"{args.sessions} sessions x {args.messages} messages after {args.warmup} warm-up "
        f"round(s); {cores} cores; 1-minute load average {min(loads):.1f}-{max(loads):.1f}\n"
    )
    print(
        "| side | wall s | CPU s | messages/s | messages/CPU-s | CPU ms/message | value recall "
        "| messages/s vs presidio | messages/CPU-s vs presidio |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    base = count / totals["presidio"]["wall"]
    base_cpu = count / totals["presidio"]["cpu"]
    for name, row in totals.items():
        rate, per_cpu = count / row["wall"], count / row["cpu"]
        print(
            f"| {name} | {row['wall']:.1f} | {row['cpu']:.1f} | {rate:.1f} | {per_cpu:.1f} | "
            f"{1000 * row['cpu'] / count:.2f} | {row['removed'] / row['values']:.4f} "
            f"({row['values']}) | {rate / base:.2f}x | {per_cpu / base_cpu:.2f}x |"
        )
    for name, row in totals.items():
        if row["workers_cpu"]:
            parent = row["cpu"] - row["workers_cpu"]
            print(
                f"\n{name}: CPU ms/message in the de-identification worker processes "
                f"{1000 * row['workers_cpu'] / count:.2f}, in the serving process (receiver, "
                f"sessionizer, checks, judge, exporters, bus, the benchmark's client) "
                f"{1000 * parent / count:.2f}"
            )


if __name__ == "__main__":
    sys.exit(main())
