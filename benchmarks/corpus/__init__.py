"""A labelled evaluation corpus of support conversations, generated from a seed.

`make_corpus(seed, split, count)` returns the conversations with their labels; `python -m
benchmarks.corpus.generate` writes them and the domains' contracts to a directory. See
README.md in this folder for what is planted and how the labels are computed.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from benchmarks.corpus.builder import World
from benchmarks.corpus.domains import DOMAINS
from benchmarks.corpus.labels import labels
from benchmarks.corpus.model import Conversation
from benchmarks.corpus.plan import schedule
from benchmarks.corpus.pools import Split
from benchmarks.corpus.selfcheck import check_conversation, check_corpus
from benchmarks.corpus.story import write

DATASET_VERSION = "turnwatch-support-corpus-1"
DEFAULT_COUNT = 300
SPLIT_SALT = {"dev": 0, "heldout": 7919}
"""The heldout split never shares a seed with dev: the same --seed gives other conversations."""


@dataclass(frozen=True)
class Corpus:
    seed: int
    split: Split
    conversations: list[Conversation]
    records: list[dict[str, Any]]

    def contracts(self) -> dict[str, dict[str, Any]]:
        return {domain.service: domain.contract for domain in DOMAINS.values()}


def make_corpus(seed: int, split: Split = "dev", count: int = DEFAULT_COUNT) -> Corpus:
    effective = seed * 1_000_003 + SPLIT_SALT[split]
    plans = schedule(random.Random(f"plan/{effective}"), count, sorted(DOMAINS))
    world = World(split)
    conversations = []
    records = []
    for plan in plans:
        domain = DOMAINS[plan.domain]
        conversation = write(effective, split, plan, domain, world)
        check_conversation(conversation, domain.contract)
        conversations.append(conversation)
        records.append(
            conversation.to_record(labels(conversation, domain.contract), DATASET_VERSION)
        )
    check_corpus(conversations)
    return Corpus(seed, split, conversations, records)
