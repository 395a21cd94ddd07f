"""The NER model's findings, read with the text around them.

The small English model labels many people's names NORP, ORG or GPE ("Olga", "Ngozi", "Zoë
Müller"); such a span in a name slot (after "my name is", a title, a greeting) is taken as a
PERSON instead of being dropped. A PERSON span is extended over a middle initial or a surname
the model cut off ("Maria J." + "Garcia"); one that is only a greeting word is dropped.
"""

from __future__ import annotations

import regex
from turnwatch.collector.deid.recognizers.base import TurnwatchRecognizer
from turnwatch.collector.deid.recognizers.names import (
    CAPITAL_PART,
    GREETINGS,
    NOT_A_NAME_WORDS,
    PARTICLE,
    STRONG_CUES,
    TITLES,
    WEAK_CUES,
)

NAME_SLOT = regex.compile(
    rf"(?i:(?<!\w)(?:{STRONG_CUES}|{WEAK_CUES}|{TITLES}|{GREETINGS}))[ \t.,\"'“]*$"
)
CONTINUATION = regex.compile(rf"(?:[ \t]+(?:{PARTICLE}[ \t]+){{0,2}}{CAPITAL_PART}){{1,2}}")
POSSESSIVE = regex.compile(r"['’]s?$")
MAX_NAME_WORDS = 6
PLACE_LABELS = frozenset({"GPE", "LOC", "FAC", "LOCATION"})
SLOT_LABELS = frozenset({"NORP", "ORG", "NRP", "ORGANIZATION"}) | PLACE_LABELS
PERSON_LABELS = frozenset({"PERSON", "PER"})


class NameNerRecognizer(TurnwatchRecognizer):
    ENTITIES = ("PERSON", "LOCATION")

    def find(self, text, nlp_artifacts):
        if nlp_artifacts is None:
            return []
        found = []
        for entity in nlp_artifacts.entities:
            label, start, end = entity.label_, entity.start_char, entity.end_char
            in_slot = bool(NAME_SLOT.search(text[max(0, start - 40) : start]))
            if label in PERSON_LABELS or (label in SLOT_LABELS and in_slot):
                span = self._person(text, start, end)
                if span is not None:
                    found.append(("PERSON", *span, 0.85 if label in PERSON_LABELS else 0.7))
            elif label in PLACE_LABELS:
                found.append(("LOCATION", start, end, 0.6))
        return found

    @staticmethod
    def _person(text: str, start: int, end: int) -> tuple[int, int] | None:
        words = text[start:end].split()
        if not words or len(words) > MAX_NAME_WORDS or any(ch.isdigit() for ch in words[0]):
            return None
        if len(words) == 1 and words[0].strip(".,!?").casefold() in NOT_A_NAME_WORDS:
            return None
        more = CONTINUATION.match(text, end)
        if more is not None:
            end = more.end()
        possessive = POSSESSIVE.search(text, start, end)
        if possessive is not None:
            end = possessive.start()
        return (start, end) if end > start else None
