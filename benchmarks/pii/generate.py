"""The corpus from a seed: distinct short texts and conversations, checked as they are made.

python -m benchmarks.pii.generate [--seed 1] [--texts 600] [--conversations 60]
"""

from __future__ import annotations

import argparse
import random
from dataclasses import dataclass

from benchmarks.pii.conversations import ConversationMaker
from benchmarks.pii.model import LabelledConversation, LabelledText
from benchmarks.pii.texts import TextMaker

MAX_ATTEMPTS_PER_TEXT = 50


@dataclass
class Corpus:
    texts: list[LabelledText]
    conversations: list[LabelledConversation]


def make_corpus(seed: int = 1, texts: int = 600, conversations: int = 60) -> Corpus:
    """`texts` distinct short texts and `conversations` conversations; no text repeats across
    the corpus (apart from the assistant's canned lines), so no cache can flatter a figure."""
    rng = random.Random(seed)
    maker = TextMaker(rng)
    seen: set[str] = set()
    short: list[LabelledText] = []
    for _ in range(texts * MAX_ATTEMPTS_PER_TEXT):
        if len(short) == texts:
            break
        text = maker.text()
        if text.text not in seen:
            seen.add(text.text)
            short.append(text)
    talks = ConversationMaker(random.Random(seed + 1))
    return Corpus(short, [talks.conversation(number) for number in range(conversations)])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--texts", type=int, default=20)
    parser.add_argument("--conversations", type=int, default=2)
    args = parser.parse_args(argv)
    corpus = make_corpus(args.seed, args.texts, args.conversations)
    for text in corpus.texts:
        print(repr(text.text), [(o.entity, o.value) for o in text.occurrences])
    for conversation in corpus.conversations:
        for turn in conversation.turns:
            print(turn.role, repr(turn.text.text) if turn.text else [c.name for c in turn.calls])


if __name__ == "__main__":
    main()
