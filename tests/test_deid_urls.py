"""The chunked URL recognizer finds exactly what Presidio's finds, in the same order."""

from __future__ import annotations

from presidio_analyzer.predefined_recognizers import UrlRecognizer
from turnwatch.collector.deid.urls import ChunkedUrlRecognizer

from benchmarks.pii.generate import make_corpus

TEXTS = [
    "see https://example.com/a?b=c and www.foo.co.uk, or 'http://x.org/p' and \"bar.io\"",
    "mail a.b@c.de (or https://shop.example.net/orders/123), then example.org.",
    "no url here: 4111-1111-1111-1111, v2.4.1, 10.0.0.1, Mr. Smith. Done.",
    "ends with a domain example.com",
    "",
]


def _found(recognizer, text):
    return [
        (r.start, r.end, r.score, r.entity_type, r.analysis_explanation.pattern_name)
        for r in recognizer.analyze(text, ["URL"])
    ]


def test_same_results_as_presidio_on_urls_and_the_pii_corpus():
    corpus = make_corpus(seed=5, texts=300, conversations=10)
    texts = TEXTS + [t.text for t in corpus.texts]
    texts += [t.text for conversation in corpus.conversations for t in conversation.texts()]
    presidio, chunked = UrlRecognizer(), ChunkedUrlRecognizer(supported_language="en")
    found = [_found(presidio, text) for text in texts]
    assert sum(map(len, found)) > 20  # the corpus holds URLs (and e-mail domains)
    assert [_found(chunked, text) for text in texts] == found
    assert chunked.name == presidio.name


def test_a_url_is_found_at_its_place_in_the_whole_text():
    text = TEXTS[1]
    [*_, last] = _found(ChunkedUrlRecognizer(supported_language="en"), text)
    assert text[last[0] : last[1]] == "example.org"
