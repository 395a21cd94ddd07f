"""Which sentences of a text the NER model reads.

The model is most of de-identification's CPU, and everything turnwatch takes from it is a
person or a place (`recognizers/ner.py`). Such a name is, as a rule, a capitalised word or
comes after a cue (a title, a greeting, "my name is"); a lower-case name with no cue, which the
model finds now and then, is what reading less gives up (on the PII corpus recall is unchanged,
`benchmarks/deid.py`; `deid.ner_scope: whole_text` reads everything). A sentence with neither
(a card number and its expiry, "Also, I will call you back.") is left out; the pattern
recognizers still read the whole text, and the model reads the other sentences one by one. A
sentence's first word is no candidate when it is a word that starts sentences (stop words,
`NOT_A_NAME_WORDS`); a word with a digit never is, since a name or place holding one is dropped
anyway.

Sentences end at ".", "!" or "?" before white space and at line breaks, but not after an
initial or an abbreviation ("Ngozi D. Tanaka", "Prof. Moreau", "no. 12"), so a name is never
cut in two. Boundaries fall on white space, where spaCy's tokenizer splits anyway, so a
sentence's tokens are the whole text's and its entities map back onto the text's own tokens.
"""

from __future__ import annotations

import regex
from spacy.lang.en.stop_words import STOP_WORDS
from turnwatch.collector.deid.recognizers.base import words
from turnwatch.collector.deid.recognizers.names import (
    GREETINGS,
    NOT_A_NAME_WORDS,
    STRONG_CUES,
    TITLES,
    WEAK_CUES,
)

SENTENCE_END = regex.compile(r"(?:(?<=(?<!\w)(?P<word>\w+))\.|[.!?]+)(?=\s)|\n")
ABBREVIATIONS = frozenset(TITLES.split("|")) | frozenset(
    words("no nr st rd ave apt dept ext tel jr co inc ltd mt vs etc approx")
)
NAME_CUE = regex.compile(
    rf"(?i:(?<!\w)(?:{STRONG_CUES}|{WEAK_CUES}|{TITLES}|{GREETINGS}|name)(?!\w))"
)
SENTENCE_STARTERS = frozenset(word.casefold() for word in STOP_WORDS) | NOT_A_NAME_WORDS
PRONOUN_I = frozenset({"I", "I'm", "I’m", "I'll", "I’ll", "I've", "I’ve", "I'd", "I’d"})
WORD_EDGES = "\"'“”‘’()[]<>.,;:!?*-"
WORD = regex.compile(r"\S+")


def sentences(text: str) -> list[tuple[int, int]]:
    """(start, end) of every sentence, white space trimmed."""
    out: list[tuple[int, int]] = []
    start = 0
    for end in SENTENCE_END.finditer(text):
        word = end.group("word")
        if word is not None and (len(word) == 1 or word.casefold() in ABBREVIATIONS):
            continue
        _add_trimmed(text, start, end.end(), out)
        start = end.end()
    _add_trimmed(text, start, len(text), out)
    return out


def _add_trimmed(text: str, start: int, end: int, out: list[tuple[int, int]]) -> None:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    if start < end:
        out.append((start, end))


def may_hold_a_name(sentence: str) -> bool:
    if NAME_CUE.search(sentence):
        return True
    for number, match in enumerate(WORD.finditer(sentence)):
        word = match.group().strip(WORD_EDGES)
        if not word or word in PRONOUN_I or any(ch.isdigit() for ch in word):
            continue
        if any(ch.isupper() for ch in word) and not (
            number == 0 and word.casefold() in SENTENCE_STARTERS
        ):
            return True
    return False


def ner_sentences(text: str) -> list[tuple[int, int]]:
    """The sentences of `text` that the NER model reads."""
    return [(start, end) for start, end in sentences(text) if may_hold_a_name(text[start:end])]
