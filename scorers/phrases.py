"""The few English phrasings the deterministic checks recognise.

These are deliberately narrow: a check that misses a paraphrase stays silent (the judge metrics
cover wording), while a check that fires must be explainable from the pattern that matched.
"""

from __future__ import annotations

import re

from turnwatch.tokens import TOKEN

_FLAGS = re.IGNORECASE

# A sentence that asks the user for something: a question, or a request for information.
_SENTENCE = re.compile(r"[^.?!\n]+[.?!]?")
_REQUEST = re.compile(
    r"^\s*(please\s+(provide|share|send|enter|give|tell|confirm)|could you|can you|would you|"
    r"may i (have|get)|i('ll| will)? need your|let me know your)\b",
    _FLAGS,
)

CONFIRMATION_ASK = re.compile(
    r"\b(confirm|shall i|should i|do you want me to|would you like me to|ok(ay)? to|"
    r"go ahead|proceed)\b",
    _FLAGS,
)
AFFIRMATIVE = re.compile(
    r"^\W*(yes|yep|yeah|sure|ok(ay)?|confirm(ed)?|go ahead|please do|do it|correct|"
    r"that's right|proceed|approved?)\b",
    _FLAGS,
)
NEGATION = re.compile(r"^\W*(no|nope)\b|\b(don'?t|do not|wait|cancel|stop|hold on)\b", _FLAGS)

FAILURE_ACKNOWLEDGED = re.compile(
    r"\b(sorry|unable|couldn'?t|could not|can'?t|cannot|failed|error|problem|issue|"
    r"unavailable|try again|not able|went wrong|trouble)\b",
    _FLAGS,
)
ESCALATION = re.compile(
    r"\b(transfer(ring)? you|connect(ing)? you (with|to)|escalat\w*|hand(ing)? (this|you) over|"
    r"human agent|live agent|a (human|colleague|specialist)|support team will)\b",
    _FLAGS,
)
# Questions that close a conversation rather than ask for anything.
CLOSING = re.compile(r"\b(anything else|something else)\b", _FLAGS)
REFUSAL = re.compile(
    r"\b(i can(no|')t help with|i('m| am) not able to (help|assist)|i('m| am) unable to "
    r"(help|assist)|i do(n'?t| not) have (access|information)|not something i can)\b",
    _FLAGS,
)
ADVERSARIAL = re.compile(
    r"\b(ignore (all |any )?(previous|prior|above|your) (instructions|rules)|you are now|"
    r"i('m| am) (an|the) (admin|administrator|manager|developer)|system prompt|developer mode|"
    r"(another|other) (user|customer)'s|bypass|override (the )?(policy|rules))\b",
    _FLAGS,
)
REVISION = re.compile(
    r"\b(actually|instead|i meant|correction|changed|change (it|my|the)|update (it|my|the)|"
    r"wrong|new (e-?mail|address|phone|number|card))\b",
    _FLAGS,
)

# How a bot asks for a fact of a given token type; contracts add their own.
FACT_QUESTIONS: dict[str, str] = {
    "EMAIL_ADDRESS": r"\be-?mail\b",
    "PHONE_NUMBER": r"\b(phone|mobile|cell|telephone)( number)?\b",
    "ORDER_NUMBER": r"\border (number|id|no\.?|#)",
    "ACCOUNT_ID": r"\baccount (number|id)\b",
    "STREET_ADDRESS": r"(?<!mail )\b(shipping |delivery |street |postal |mailing )?address\b",
    "PERSON": r"\byour (full |first |last )?name\b",
    "CREDIT_CARD": r"\b(card number|credit card)\b",
    "IBAN_CODE": r"\biban\b",
}


def asking_sentences(text: str) -> list[str]:
    """Sentences that ask the user for something (ending in `?`, or a polite request)."""
    return [
        sentence
        for sentence in _SENTENCE.findall(text)
        if sentence.rstrip().endswith("?") or _REQUEST.search(sentence)
    ]


def is_affirmative(text: str) -> bool:
    return AFFIRMATIVE.search(text) is not None and NEGATION.search(text) is None


def tokens(text: str) -> list[tuple[str, str]]:
    """(token, entity type) for every de-identification token in the text."""
    return [(match.group(0), match.group(1)) for match in TOKEN.finditer(text)]


# Facts a user has one of at a time: a second, different value in a later turn is a revision.
# (Order numbers or names are excluded: a user can legitimately mention several.)
SINGLE_VALUED = frozenset(
    {
        "EMAIL_ADDRESS",
        "PHONE_NUMBER",
        "STREET_ADDRESS",
        "CREDIT_CARD",
        "IBAN_CODE",
        "US_BANK_NUMBER",
    }
)
