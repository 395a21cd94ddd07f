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
)

# Weak cues ("this is", "I'm") are left out: "this is Acme support" names a company.
NAME_SLOT = regex.compile(rf"(?im:(?<!\w)(?:{STRONG_CUES}|{TITLES}|{GREETINGS}))[ \t.,\"'“]*$")
CONTINUATION = regex.compile(rf"(?:[ \t]+(?:{PARTICLE}[ \t]+){{0,2}}{CAPITAL_PART}){{1,2}}")
POSSESSIVE = regex.compile(r"['’]s?$")
# A "person" followed by one of these is a company or a department ("Acme support").
ORGANISATION_AFTER = regex.compile(
    r"^(?:['’]s)?[ \t]+(?i:support|team|service|services|customer|care|help|helpdesk|bank|"
    r"store|shop|inc|ltd|llc|gmbh|corp|corporation|company|group|airlines|airways|insurance|energy|"
    r"telecom|mobile|online|app)\b"
)
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
            elif label in PLACE_LABELS and not any(ch.isdigit() for ch in text[start:end]):
                found.append(("LOCATION", start, end, 0.6))
        return found

    @staticmethod
    def _person(text: str, start: int, end: int) -> tuple[int, int] | None:
        newline = text.find("\n", start, end)
        if newline >= 0:
            end = newline
        words = text[start:end].split()
        if not words or len(words) > MAX_NAME_WORDS or any(ch.isdigit() for ch in text[start:end]):
            return None
        if len(words) == 1 and words[0].strip(".,!?").casefold() in NOT_A_NAME_WORDS:
            return None
        if ORGANISATION_AFTER.match(text[end : end + 24]):
            return None
        more = CONTINUATION.match(text, end)
        if more is not None and any(ch.isdigit() for ch in more.group()):
            more = None
        if more is not None:
            end = more.end()
        possessive = POSSESSIVE.search(text, start, end)
        if possessive is not None:
            end = possessive.start()
        return (start, end) if end > start else None
