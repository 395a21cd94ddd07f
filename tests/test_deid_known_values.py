"""Looking pieces of text up among a session's known values: the answer of computing every
piece's canonical form, computing far fewer."""

from __future__ import annotations

import regex
from turnwatch.collector.deid.config import DeidConfig
from turnwatch.collector.deid.pseudonym import KnownValues, canonical
from turnwatch.collector.deid.recognizers.numbers import (
    _phone_parses,
    e164,
    phone_region,
    remembered_phone_parses,
)

from benchmarks.pii.generate import make_corpus

REGIONS = DeidConfig().phone_regions
WORD = regex.compile(r"\S+")


def _canonical(value: str) -> str:
    return canonical(value, REGIONS)


def test_same_answers_as_computing_every_canonical_form():
    corpus = make_corpus(seed=11, texts=300, conversations=0)
    texts = [text.text for text in corpus.texts] + [
        "call +1 (415) 555-0100 or 415.555.0100",
        "ref A-10234 / a10234, card 4111 1111 1111 1111 and ４１１１ 1111 1111 1111",
    ]
    keys = {
        _canonical(text.text[item.start : item.end])
        for text in corpus.texts
        for item in text.occurrences
        if any(ch.isdigit() for ch in text.text[item.start : item.end])
    } | {_canonical("+1 415 555 0100"), _canonical("A-10234"), _canonical("4111111111111111")}
    computed = []

    def counting(value: str) -> str:
        computed.append(value)
        return _canonical(value)

    known = KnownValues(keys, counting)
    pieces = []
    for text in texts:
        words = [match.span() for match in WORD.finditer(text)]
        for first, (start, _) in enumerate(words):
            pieces += [text[start:end] for _, end in words[first : first + 4]]
    for piece in pieces:
        value = _canonical(piece)
        assert known.get(piece) == (value if value in keys else None), piece
    assert len(computed) < len(pieces) / 3
    hits = [piece for piece in pieces if known.get(piece) is not None]
    assert {"+1 (415) 555-0100", "415.555.0100", "a10234,", "４１１１ 1111 1111 1111"} <= set(hits)


def test_remembered_phone_parses_answer_as_parsing_and_are_forgotten_with_the_session():
    corpus = make_corpus(seed=11, texts=300, conversations=0)
    values = [
        match.group()
        for text in corpus.texts
        for match in regex.finditer(r"[+(]?\d[\d ().-]{5,}\d", text.text)
    ]
    values += [*values[:20], "+1 (415) 555-0100", "0049 30 1234567", "12 34"]
    parsed = [(phone_region(value, REGIONS), e164(value, REGIONS)) for value in values]
    assert sum(region is not None for region, _ in parsed) >= 20  # the corpus has phones
    with remembered_phone_parses():
        assert [(phone_region(v, REGIONS), e164(v, REGIONS)) for v in values] == parsed
        # Another region list is another question, never the remembered answer.
        assert phone_region("020 7946 0958", ["GB"]) == "GB"
        assert phone_region("020 7946 0958", ["US"]) is None
    assert _phone_parses.get() is None
