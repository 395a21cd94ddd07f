"""People's names where the text itself says a name is coming: an introduction ("my name is",
"call me"), a title ("Ms", "Dr"), a greeting or sign-off ("Thanks, Maria!"), a labelled field
("Passenger: ..."), or a line heading a contact block or closing a letter. Names are Unicode
words (José, Zoë, Łukasz, Nguyễn, O'Neill), with initials (J.), hyphens (García-López) and
surname particles (van der Berg, de la Cruz); a strong cue takes them in lower case too.
"""

from __future__ import annotations

import regex
from turnwatch.collector.deid.recognizers.base import TurnwatchRecognizer, words

PARTICLE = (
    r"(?:van|von|der|den|de|del|della|degli|di|da|das|dos|do|du|la|le|ter|ten|bin|ibn|al|el|"
    r"st\.|mac|zu)"
)
WORD = r"(?:\p{L}[\p{L}\p{M}]*(?:['’-]\p{L}[\p{L}\p{M}]*)*)"
CAPITALISED = r"(?:\p{Lu}[\p{L}\p{M}]*(?:['’-]\p{L}[\p{L}\p{M}]*)*)"
INITIAL = r"(?:\p{Lu}\.)"

# Words that end a name, or that cue phrases are followed by when no name comes.
NOT_A_NAME_WORDS = frozenset(
    words(
        """
        cheers regards sincerely best kind dear driver ip license licence passport expiry
        pls plz help thx ty
        a an the and but or so nor for from at in on with here there please thanks thank to
        i is was are am be been being my your our his her their its me you we they it this
        that these those again speaking calling just also not no yes ok okay sure hi hello
        hey by of if as up out about what who why how when where which sorry fine good great
        well happy glad looking trying going having getting writing wondering still now
        today tomorrow yesterday back new interested unable able calling afraid confused
        frustrated worried ready done back home available team support all everyone
        everybody guys folks sir madam customer service agent bot assistant user name called
        regarding concerning re account order booking number email phone address card
        password
        """
    )
)
TITLES = (
    r"mr|mrs|ms|miss|mx|dr|prof|professor|sir|dame|madam|madame|mme|mlle|herr|frau|señor|"
    r"señora|señorita|sr|sra|srta|sig|signor|signora|dott|mevrouw|meneer|pan|pani"
)
# Capitalised words that start sentences and greetings far more often than they are names
# (short names such as "An" or "Li" stay possible).
NOT_A_CAPITALISED_NAME_WORDS = frozenset(
    words(
        """
        I The A And But Or So For From At In On With Here There Please Thanks Thank Hi Hello
        Hey Dear Yes No Ok Okay Sure Sorry Team Support Customer Service Agent All Everyone
        Sir Madam It This That My Your We You Is Was Am Just Also Not Good Great Welcome Bye
        Regards Best Cheers Sincerely Account Order Booking Email Phone Address Card
        """
    )
)


def _none_of(words: frozenset[str], flags: str) -> str:
    return f"(?!(?{flags}:" + "|".join(sorted(words, key=len, reverse=True)) + r")\b)"


NOT_A_NAME = _none_of(NOT_A_NAME_WORDS | frozenset(TITLES.split("|")), "i")
NOT_A_CAPITALISED_NAME = _none_of(
    NOT_A_CAPITALISED_NAME_WORDS | {title.capitalize() for title in TITLES.split("|")}, "-i"
)
# An initial is never the article or pronoun it looks like ("June A. Rivers").
CAPITAL_PART = rf"(?:{INITIAL}|{NOT_A_CAPITALISED_NAME}{CAPITALISED})"
NAME_PART = rf"(?:{CAPITAL_PART}|(?:\p{{L}}\.)|{NOT_A_NAME}{WORD})"
# One to four parts, with particles before and between them.
NAME = (
    rf"(?:{PARTICLE}[ \t]+){{0,2}}{NAME_PART}"
    rf"(?:[ \t]+(?:{PARTICLE}[ \t]+){{0,2}}{NAME_PART}){{0,3}}"
)
CAPITAL_NAME = (
    rf"(?:{PARTICLE}[ \t]+){{0,2}}{CAPITAL_PART}"
    rf"(?:[ \t]+(?:{PARTICLE}[ \t]+){{0,2}}{CAPITAL_PART}){{0,3}}"
)
NAME_SHAPE = regex.compile(rf"{NAME}")

STRONG_CUES = (
    r"my\s+(?:full\s+|first\s+|last\s+|real\s+|legal\s+)?name\s+is|my\s+name'?s|"
    r"(?:full\s+|first\s+|last\s+|sur|given\s+|family\s+|maiden\s+)name\s*(?:is|[:=-])|"
    r"name\s*[:=]|call\s+me|i\s+am\s+called|i'?m\s+called|name\s+on\s+the\s+(?:account|card|"
    r"booking|reservation)\s+is|(?:account|card)\s*holder\s*(?:is|[:=-])|"
    r"(?:passenger|guest|traveller|traveler|beneficiary|recipient|payee|contact|patient|"
    r"driver|attendee|applicant|signatory|addressee|sender)(?:\s+name)?\s*[:=-]|"
    r"(?:it'?s|it\s+is)\s+under|booked\s+under|registered\s+(?:to|under)|"
    r"spelled|spelt|signed|sincerely,?|regards,?"
)
WEAK_CUES = r"i'?m|i\s+am|this\s+is|it'?s|here\s+is|meet|named|called"
# After a weak cue a name ends the clause ("This is Acme support" names a company).
AFTER_WEAK_NAME = (
    r"(?=[ \t]*(?:[,.!?;:)\n]|$|(?i:from|speaking|here|calling|again|and|with|about|"
    r"regarding|i|my|pls|please|thanks)\b))"
)
GREETINGS = (
    r"hi|hello|hey|dear|thanks|thank\s+you|cheers|bye|goodbye|good\s+(?:morning|afternoon|"
    r"evening|night)|welcome|sorry|congratulations|ok|okay|alright|great|sure|of\s+course|"
    r"no\s+problem|you'?re\s+welcome|take\s+care|have\s+a\s+(?:good|nice|great)\s+\w+"
)
STRONG = regex.compile(rf"(?i:(?<!\w)(?:{STRONG_CUES}))[ \t]*\n?[ \t]*[\"'“]?(?P<name>{NAME})")
WEAK = regex.compile(rf"(?i:(?<!\w)(?:{WEAK_CUES}))[ \t]+(?P<name>{CAPITAL_NAME}){AFTER_WEAK_NAME}")
# A message opening with a greeting and an introduction: "hey its tomás le roux pls help".
GREETED = regex.compile(
    rf"(?im:(?:^|(?<=[.!?][ \t]))[ \t]*(?:hi|hey|hello)[,!]?[ \t]+(?:it'?s|its|this\s+is|i'?m|"
    rf"i\s+am))[ \t]+"
    rf"(?P<name>{NAME}){AFTER_WEAK_NAME}"
)
# Opening a sentence, a weak cue takes a lower-case name of two or more words when the clause
# ends with it or with a request ("this is faith bell pls help"); words that describe a state
# ("it's very late.", "this is taking ages") are not names.
NOT_A_LOWER_NAME_WORDS = frozenset(
    words(
        """
        very really quite pretty rather too super so totally completely absolutely extremely
        urgent late wrong broken damaged missing lost delayed right correct important serious
        ridiculous annoying terrible awful bad worse worst same other only first last second
        """
    )
)
LOWER_PART = rf"(?:{_none_of(NOT_A_LOWER_NAME_WORDS, 'i')}(?!\p{{L}}+ing\b){NAME_PART})"
LOWER_NAME = rf"{LOWER_PART}(?:[ \t]+(?:{PARTICLE}[ \t]+){{0,2}}{LOWER_PART}){{0,3}}"
# "name is ..." opening a sentence, as users type it ("name is james costa pls help").
NAME_IS = regex.compile(
    rf"(?:^|(?<=[.!?,;:\n][ \t]{{0,3}}))(?i:name(?:\s+is|'s))[ \t]+(?P<name>{LOWER_NAME})"
)
LOWER_INTRODUCED = regex.compile(
    rf"(?im:(?:^|(?<=[.!?][ \t]))[ \t]*(?:this\s+is|it'?s|its|i'?m|im|i\s+am))[ \t]+"
    rf"(?P<name>{LOWER_PART}(?:[ \t]+(?:{PARTICLE}[ \t]+){{0,2}}{LOWER_PART}){{1,3}})"
    rf"(?=[ \t]*(?:[,.!?;)\n]|$|(?i:here|speaking|calling|again|pls|plz|please|thx|thanks|ty)\b))"
)
TITLED = regex.compile(rf"(?i:(?<!\w)(?:{TITLES}))\.?[ \t]+(?P<name>{CAPITAL_NAME})")
VOCATIVE = regex.compile(
    rf"(?i:(?<!\w)(?:{GREETINGS}))[ \t]*,?[ \t]+(?P<name>{CAPITAL_NAME})(?=[ \t]*(?:[,!.?;:)]|$))",
    regex.MULTILINE,
)
SIGN_OFF = regex.compile(
    r"(?im)^[ \t]*(?:(?:best|kind|warm|many)?[ \t]*(?:regards|wishes|thanks)|thank\s+you|"
    r"cheers|sincerely|yours(?:\s+(?:truly|sincerely|faithfully))?|best|love|--|—|-)[ \t]*[,.!]?"
    r"[ \t]*\n"
)
CONTACT_LINE = regex.compile(
    r"(?i)@|\d{3}|(?<!\w)(?:tel|phone|mobile|cell|email|e-mail|fax|address|street|st\.|road|"
    r"avenue|ave|www\.|http)(?!\w)"
)
LINE = regex.compile(r"(?m)^[ \t]*(?P<line>[^\n]*?)[ \t]*$")
MAX_HEADING_CHARS = 48


class IntroducedNameRecognizer(TurnwatchRecognizer):
    """After a strong cue in any case; after a weak cue, a title or a greeting only when
    capitalised (the name a user types after "I'm" is as often "fine")."""

    ENTITIES = ("PERSON",)

    def find(self, text, nlp_artifacts):
        found = []
        patterns = (
            *((STRONG, 0.8), (NAME_IS, 0.7), (GREETED, 0.7), (WEAK, 0.55)),
            (LOWER_INTRODUCED, 0.55),
            *((TITLED, 0.85), (VOCATIVE, 0.6)),
        )
        for pattern, score in patterns:
            for match in pattern.finditer(text):
                start, end = match.span("name")
                found.append(("PERSON", start, end, score))
        return found


class ContactBlockNameRecognizer(TurnwatchRecognizer):
    """A line that is only a name, heading a block of contact lines or closing a letter."""

    ENTITIES = ("PERSON",)

    def find(self, text, nlp_artifacts):
        if "\n" not in text:
            return []
        lines = list(LINE.finditer(text))
        found = []
        for number, line in enumerate(lines):
            value = line.group("line")
            if not value or len(value) > MAX_HEADING_CHARS or not NAME_SHAPE.fullmatch(value):
                continue
            following = lines[number + 1].group("line") if number + 1 < len(lines) else ""
            heads_contacts = bool(CONTACT_LINE.search(following))
            closes_letter = bool(SIGN_OFF.search(text[: line.start()][-40:] + "\n")) and (
                number > 0 and SIGN_OFF.fullmatch(lines[number - 1].group() + "\n")
            )
            if heads_contacts or closes_letter:
                found.append(("PERSON", line.start("line"), line.end("line"), 0.7))
        return found
