"""Write the corpus: `python -m benchmarks.corpus.generate --seed N --out DIR [--split S]`.

DIR receives `conversations.jsonl` (one record a line, in the evaluation guide's dataset schema
plus `labels` and `emission`), `contracts/<service>.yaml` (today's contract format, loaded back
with turnwatch's own registry before anything is written) and `manifest.json` (seed, split,
counts per kind).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import yaml
from turnwatch.scorers.registry import ContractRegistry

from benchmarks.corpus import DEFAULT_COUNT, Corpus, make_corpus


def write_contracts(contracts: dict[str, dict[str, Any]], directory: Path) -> list[Path]:
    """One YAML file per service, loaded back with turnwatch's registry (fails loudly)."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for service, contract in sorted(contracts.items()):
        path = directory / f"{service}.yaml"
        header = f"# Contract for {service}, written by benchmarks/corpus/generate.py.\n"
        path.write_text(header + yaml.safe_dump(contract, sort_keys=False), encoding="utf-8")
        paths.append(path)
    ContractRegistry.from_directory(directory)
    return paths


def write_corpus(corpus: Corpus, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    write_contracts(corpus.contracts(), out / "contracts")
    with (out / "conversations.jsonl").open("w", encoding="utf-8") as handle:
        for record in corpus.records:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    kinds = Counter(
        label["kind"]
        for record in corpus.records
        for label in (*record["labels"]["defects"], *record["labels"]["near_misses"])
    )
    manifest = {
        "seed": corpus.seed,
        "split": corpus.split,
        "conversations": len(corpus.records),
        "clean": sum(record["labels"]["clean"] for record in corpus.records),
        "kinds": dict(sorted(kinds.items())),
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--split", choices=["dev", "heldout"], default="dev")
    parser.add_argument("--count", type=int, default=DEFAULT_COUNT)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    try:
        corpus = make_corpus(args.seed, args.split, args.count)
    except ValueError as exc:
        parser.error(str(exc))
    write_corpus(corpus, args.out)
    print(f"{len(corpus.records)} conversations ({args.split}, seed {args.seed}) -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
