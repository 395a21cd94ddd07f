"""Detection quality: the labelled corpus through a real `turnwatch serve`, scored against labels.

    python benchmarks/detection.py [--split dev|heldout] [--seed N] [--count N] [--limit N]
                                   [--corpus DIR] [--json]

The corpus (generated from the seed, or read from a directory written by
`python -m benchmarks.corpus.generate`) is sent as its chatbots would send it: the OTel SDK's
OTLP/HTTP protobuf exporter, one tracer provider per service, conversation by conversation in
corpus order (a disclosure across sessions needs its source session scored first). The server
runs with the embedded bus, free ports, a temporary data directory, the corpus's contracts, a
pseudonym key chosen here, default de-identification and the built-in heuristic judge; beside
its exporters `benchmarks/detection_sink.py` taps the exporter role and writes every score
record to a file. A record is matched to its conversation through the session id turnwatch
derives from the conversation key, and must have rebuilt exactly the corpus's turns (the
labels index them). Definitions of every figure: `benchmarks/detection_report.py`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import secrets
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from turnwatch.collector.deid.secret import session_id_key
from turnwatch.collector.session_keys import session_id_for

from benchmarks.corpus import DEFAULT_COUNT, make_corpus
from benchmarks.corpus.emit import Emitter
from benchmarks.corpus.generate import write_contracts
from benchmarks.corpus.model import from_record
from benchmarks.detection_report import markdown, report
from benchmarks.detection_server import Server


def load_corpus(args: argparse.Namespace) -> tuple[list[dict[str, Any]], dict[str, dict]]:
    """(corpus records, contracts by service)."""
    if args.corpus is not None:
        lines = (args.corpus / "conversations.jsonl").read_text(encoding="utf-8").splitlines()
        records = [json.loads(line) for line in lines if line.strip()]
        contracts = {}
        for path in sorted((args.corpus / "contracts").glob("*.yaml")):
            contract = yaml.safe_load(path.read_text(encoding="utf-8"))
            contracts[contract["service"]] = contract
        return records, contracts
    corpus = make_corpus(args.seed, args.split, args.count)
    return corpus.records, corpus.contracts()


def run(
    records: list[dict[str, Any]],
    contracts: dict[str, dict],
    timeout: float,
    secret: str,
    workdir: Path | None = None,
) -> list[dict]:
    """Send every conversation; return the score records the server produced for them.

    `secret` is the server's `deid.secret`, which keys the session ids (`match` needs it).
    `workdir` keeps the server's directory (its session store is `workdir/data/sessions.db`);
    by default a temporary one is removed afterwards."""
    with contextlib.ExitStack() as stack:
        if workdir is None:
            workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="tw-detect-")))
        work = workdir
        contracts_dir = work / "contracts"
        write_contracts(contracts, contracts_dir)
        server = Server(work, contracts_dir, secret=secret)
        providers = server.providers(sorted(contracts))
        try:
            emitter = Emitter(providers)
            started = time.monotonic()
            for record in records:
                emitter.emit(from_record(record))
            print(
                f"sent {len(records)} conversations in {time.monotonic() - started:.1f} s",
                file=sys.stderr,
            )
            return server.wait_for(len(records), timeout, progress=_progress(len(records)))
        finally:
            for provider in providers.values():
                provider.shutdown()
            code = server.stop()
            if code != 0:
                log = server.stderr_path.read_text(encoding="utf-8")[-2000:]
                print(f"turnwatch serve exited with {code}:\n{log}", file=sys.stderr)


def _progress(total: int):
    last = [-1]

    def show(scored: int) -> None:
        if scored != last[0]:
            print(f"scored {scored}/{total}", file=sys.stderr)
            last[0] = scored

    return show


def match(
    records: list[dict[str, Any]], scores: list[dict[str, Any]], secret: str
) -> tuple[list[tuple[dict, dict]], dict[str, int]]:
    """(corpus record, latest score record) pairs, and what could not be paired; `secret` is
    the server's `deid.secret`, from which it derived the session ids."""
    latest: dict[str, dict] = {}
    for score in scores:
        known = latest.get(score["session_id"])
        if known is None or score["revision"] > known["revision"]:
            latest[score["session_id"]] = score
    pairs = []
    problems = {"missing": 0, "turns_differ": 0, "unexpected": 0}
    id_key = session_id_key(secret.encode())
    expected = {
        session_id_for(record["emission"]["service"], record["conversation_id"], id_key): record
        for record in records
    }
    problems["unexpected"] = len(set(latest) - set(expected))
    for session_id, record in expected.items():
        score = latest.get(session_id)
        if score is None:
            problems["missing"] += 1
        elif score["budgets"]["turns"] != len(record["turns"]):
            problems["turns_differ"] += 1
        else:
            pairs.append((record, score))
    return pairs, problems


def add_corpus_arguments(parser: argparse.ArgumentParser) -> None:
    """Which corpus: generated from a seed and split, or read from a directory."""
    parser.add_argument("--split", choices=["dev", "heldout"], default="dev")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--count", type=int, default=DEFAULT_COUNT)
    parser.add_argument("--corpus", type=Path, help="a directory written by the generator")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_corpus_arguments(parser)
    parser.add_argument("--limit", type=int, help="only the first N conversations")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds to wait for scores")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    if args.corpus is not None and not (args.corpus / "conversations.jsonl").is_file():
        parser.error(f"--corpus {args.corpus}: no conversations.jsonl (write one with generate)")
    records, contracts = load_corpus(args)
    if args.limit is not None:
        records = records[: args.limit]
    secret = secrets.token_hex(16)
    scores = run(records, contracts, args.timeout, secret)
    pairs, problems = match(records, scores, secret)
    figures = {"corpus": {"conversations": len(records), "matched": len(pairs), **problems}}
    figures.update(report(pairs))
    if args.json:
        print(json.dumps(figures, indent=2))
    else:
        corpus = figures["corpus"]
        print(
            f"{corpus['matched']} of {corpus['conversations']} conversations matched "
            f"(missing {corpus['missing']}, rebuilt with other turns {corpus['turns_differ']}, "
            f"unexpected sessions {corpus['unexpected']})\n"
        )
        print(markdown(figures))
    return 0 if len(pairs) == len(records) else 1


if __name__ == "__main__":
    sys.exit(main())
