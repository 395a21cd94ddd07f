"""What the NER model reads: the sentences that may hold a name, mapped back onto the text."""

from __future__ import annotations

import pydantic
import pytest
from turnwatch.collector.deid.config import DeidConfig
from turnwatch.collector.deid.engine import load_nlp_engine
from turnwatch.collector.deid.ner_scope import may_hold_a_name, ner_sentences, sentences

pytestmark = pytest.mark.slow  # the spaCy model, loaded twice

MODEL = DeidConfig().model


@pytest.fixture(scope="module")
def engines():
    return load_nlp_engine(MODEL), load_nlp_engine(MODEL, whole_texts=True)


def _pieces(text: str, spans: list[tuple[int, int]]) -> list[str]:
    return [text[start:end] for start, end in spans]


def test_sentences_end_at_stops_and_line_breaks_but_never_inside_a_name():
    text = "Please call Ngozi D. Tanaka.  Prof. Moreau agreed!\nThanks,\nno. 12 is fine... ok"
    assert _pieces(text, sentences(text)) == [
        "Please call Ngozi D. Tanaka.",
        "Prof. Moreau agreed!",
        "Thanks,",
        "no. 12 is fine...",
        "ok",
    ]


@pytest.mark.parametrize(
    "sentence",
    [
        "I met Olga at the desk.",  # a capitalised word inside the sentence
        "Olga called about it.",  # a name opening the sentence
        "my name is lucía",  # a cue, in lower case
        "thanks olga",  # a greeting before a lower-case name
        "ship it to the UK",  # a place in capitals
    ],
)
def test_a_sentence_that_may_hold_a_name_is_read(sentence):
    assert may_hold_a_name(sentence)


@pytest.mark.parametrize(
    "sentence",
    [
        "Please charge my card 4111 1111 1111 1111, expiry 04/27.",
        "Also, I will call you back.",
        "My passport no. is C02734646.",
        "Can you check where the order is?",
        "",
    ],
)
def test_a_sentence_without_a_capitalised_word_or_a_cue_is_not_read(sentence):
    assert not may_hold_a_name(sentence)


def test_the_model_runs_without_the_components_its_ner_does_not_listen_to(engines):
    assert engines[0].nlp["en"].pipe_names == ["ner"]
    assert engines[1].nlp["en"].pipe_names == ["ner"]


def test_entities_found_in_sentences_sit_on_the_whole_texts_tokens(engines):
    scoped, whole = engines
    text = (
        "Please charge my card 4111 1111 1111 1111, expiry 04/27. Also, I will call you "
        "back.\n\nThanks,\nMaria Garcia\n\nI spoke with John Smith in Berlin yesterday."
    )
    assert _pieces(text, ner_sentences(text)) == [
        "Thanks,",  # a greeting: a name may follow it on the line
        "Maria Garcia",
        "I spoke with John Smith in Berlin yesterday.",
    ]
    nlp = scoped.nlp["en"]
    with nlp.memory_zone():
        [(_, artifacts)] = list(scoped.process_batch([text], "en", batch_size=8))
        [(_, reference)] = list(whole.process_batch([text], "en", batch_size=8))
        found = {(entity.text, entity.label_) for entity in artifacts.entities}
        assert {"Maria Garcia", "John Smith", "Berlin"} <= {text for text, _ in found}
        for entity in artifacts.entities:
            assert text[entity.start_char : entity.end_char] == entity.text
        # Presidio's context words read every token, and the tokens are the whole text's.
        assert [token.text for token in artifacts.tokens] == [
            token.text for token in reference.tokens
        ]
        assert artifacts.tokens_indices == reference.tokens_indices


def test_a_text_read_whole_gets_the_whole_text_entities(engines):
    scoped, whole = engines
    texts = ["Hi, this is Priya Raman from Leeds, my flight with Lufthansa was cancelled."]
    nlp = scoped.nlp["en"]
    with nlp.memory_zone():
        got = [
            [(e.start_char, e.end_char, e.label_) for e in artifacts.entities]
            for _, artifacts in scoped.process_batch(texts, "en", batch_size=8)
        ]
        want = [
            [(e.start_char, e.end_char, e.label_) for e in artifacts.entities]
            for _, artifacts in whole.process_batch(texts, "en", batch_size=8)
        ]
    assert got == want and got[0]


def test_an_unknown_ner_scope_is_refused_by_name():
    with pytest.raises(pydantic.ValidationError, match="ner_scope"):
        DeidConfig(ner_scope="everything")
