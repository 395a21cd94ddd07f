"""Findings that only the conversation around a text reveals.

- Answers: after the assistant asks for a name ("What's the name on the account?"), a phone
  number, a password, an address, ..., the user's short reply is that value, whatever it looks
  like ("rose hill", "hunter2").
- Split values: a number typed across consecutive user turns ("it's 415 732..." then
  "...9184") is joined and analysed whole; each part is replaced with the token of the whole.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass

import regex
from turnwatch.collector.deid.cache import Finding
from turnwatch.collector.deid.recognizers.base import TurnwatchRecognizer
from turnwatch.collector.deid.recognizers.names import NAME_SHAPE

from turnwatch.schema import Role

# What the assistant asked for, by words in its last question; the first kind that matches.
QUESTION_KINDS: tuple[tuple[str, str], ...] = (
    ("PASSWORD", r"password|passcode|pin\b|security answer|memorable word"),
    ("ONE_TIME_CODE", r"\b(?:one[- ]time|verification|security|confirmation|sms|2fa) code|"
                      r"\bcode (?:we|i) (?:sent|texted|emailed)|\botp\b"),
    ("USERNAME", r"user ?name|login|user id|handle"),
    ("EMAIL_ADDRESS", r"e-?mail"),
    ("PHONE_NUMBER", r"phone|mobile|cell|number (?:we|i) can (?:reach|call)|call you back"),
    ("STREET_ADDRESS", r"address|where (?:should|do|can) (?:we|i) (?:ship|send|deliver)|"
                       r"postcode|post code|zip"),
    ("DATE_TIME", r"date of birth|birth ?date|birthday|\bdob\b|when were you born"),
    ("US_SSN", r"social security|\bssn\b"),
    ("CREDIT_CARD", r"card number|credit card|debit card|long number on"),
    ("IBAN_CODE", r"\biban\b"),
    ("ORDER_NUMBER", r"order (?:number|id|reference)|tracking number|invoice number"),
    ("BOOKING_REFERENCE", r"booking (?:reference|number|code)|reservation|confirmation "
                          r"(?:number|code)|\bpnr\b"),
    ("ACCOUNT_ID", r"account (?:number|id)|member(?:ship)? (?:number|id)|customer "
                   r"(?:number|id)|policy number"),
    ("PERSON", r"\bname\b|who am i (?:speaking|talking) (?:to|with)|who is this|"
               r"who(?:m)? (?:is|should) (?:it|the \w+) (?:be )?(?:for|addressed to)"),
)  # fmt: skip
KIND_PATTERNS = [(entity, regex.compile(rf"(?i){words}")) for entity, words in QUESTION_KINDS]
ASKS = regex.compile(
    r"(?i)\?|\b(?:please|kindly)\s+(?:provide|enter|confirm|send|share|tell|give|type|spell)|"
    r"\b(?:can|could|may) (?:you|i) (?:have|get|provide|confirm|tell|give|share)"
)
SENTENCE = regex.compile(r"[^.!?\n]*(?:[.!?]|$)")
FILLER = regex.compile(
    r"(?i)^(?:\s*(?:sure|yes|yeah|yep|yup|ok|okay|of course|certainly|absolutely|hi|hello|"
    r"hey|no problem|right|alright|so)\b[,.!:]?)*\s*(?:(?:it'?s|it is|that'?s|that is|this is|"
    r"i'?m|i am|here it is|here you go|my [\w ]{1,30}? (?:is|are)|the [\w ]{1,30}? is)\b\s*"
    r"[:-]?)?\s*[\"'“]?"
)
TRAILER = regex.compile(
    r"(?i)[\"'”]?\s*[,.!]*\s*(?:(?:thanks|thank you|thx|ty|please|cheers)\b[\s.!]*)*$"
)
MAX_ANSWER_CHARS = 120
# Numbers asked for start at their first digit ("call me on 415...", "sure, 4111 ...").
NUMERIC_ANSWERS = frozenset(
    {"PHONE_NUMBER", "CREDIT_CARD", "US_SSN", "ORDER_NUMBER", "ACCOUNT_ID", "ONE_TIME_CODE"}
)
SECRET_ANSWERS = frozenset({"PASSWORD", "USERNAME"})
NUMERIC_START = regex.compile(r"[+(]?\d")
MAX_NAME_WORDS = 5


@dataclass(frozen=True, slots=True)
class TurnText:
    role: Role
    text: str


def asked_for(question: str) -> str | None:
    """The entity the assistant's message asks the user for, if it asks for one."""
    if not ASKS.search(question):
        return None
    sentences = [s for s in SENTENCE.findall(question) if s.strip()]
    asking = [s for s in sentences if ASKS.search(s)] or sentences
    for sentence in reversed(asking):
        for entity, pattern in KIND_PATTERNS:
            if pattern.search(sentence):
                return entity
    return None


def answer_span(entity: str, text: str) -> tuple[int, int] | None:
    """The part of a reply that is the value asked for, or None if it does not look like one."""
    start = FILLER.match(text).end()
    trailer = TRAILER.search(text, start)
    end = trailer.start() if trailer is not None else len(text)
    if entity in SECRET_ANSWERS:
        # A secret's own punctuation is part of it ("Mango2710!"): it ends at white space.
        token = regex.match(r"\S+", text[start:])
        end = start + len(token.group().rstrip(".,;")) if token else end
    if entity in NUMERIC_ANSWERS:
        first = NUMERIC_START.search(text, start, end)
        if first is None:
            return None
        start = first.start()
    value = text[start:end]
    if not value.strip() or len(value) > MAX_ANSWER_CHARS:
        return None
    if entity == "PERSON":
        fits = len(value.split()) <= MAX_NAME_WORDS and bool(NAME_SHAPE.fullmatch(value))
    elif entity in ("PASSWORD", "USERNAME", "ONE_TIME_CODE", "EMAIL_ADDRESS"):
        fits = len(value.split()) == 1
    elif entity == "STREET_ADDRESS":
        fits = any(ch.isdigit() for ch in value) or len(value.split()) <= 6
    else:
        fits = any(ch.isdigit() for ch in value)
    return (start, end) if fits else None


def answers(turns: list[TurnText]) -> dict[str, list[Finding]]:
    """Findings for user replies to the assistant's questions, by text."""
    found: dict[str, list[Finding]] = {}
    question: str | None = None
    for turn in turns:
        if turn.role is Role.ASSISTANT:
            question = turn.text
        elif turn.role is Role.USER:
            entity = asked_for(question) if question else None
            span = answer_span(entity, turn.text) if entity else None
            if entity and span:
                found.setdefault(turn.text, []).append(Finding(*span, entity, 0.75))
            question = None
    return found


CHUNK = r"[A-Za-z]{0,4}\d[A-Za-z0-9]*"
FRAGMENT = rf"\(?{CHUNK}(?:[ \-./()]{{1,3}}{CHUNK})*"
TAIL = regex.compile(rf"(?<![\w+])(?P<fragment>\+?{FRAGMENT})[\s.,…-]*$")
HEAD = regex.compile(rf"^[\s.,…-]*(?P<fragment>{FRAGMENT})(?![\w])")
MIN_PART_DIGITS, MIN_JOINED_DIGITS = 2, 6
# An acknowledgement between two parts ("Go on.", "Got it, and the rest?") keeps them one value.
MAX_ACK_CHARS = 60


def _digits(text: str) -> int:
    return sum(ch.isdigit() for ch in text)


def split_values(
    turns: list[TurnText],
    recognizers: list[TurnwatchRecognizer],
    canonical: Callable[[str], str],
) -> dict[str, list[Finding]]:
    """Findings for the parts of values typed across consecutive user turns, by text."""
    found: dict[str, list[Finding]] = {}
    users = [n for n, turn in enumerate(turns) if turn.role is Role.USER]
    for first, second in itertools.pairwise(users):
        between = turns[first + 1 : second]
        if any(t.role is Role.ASSISTANT and len(t.text) > MAX_ACK_CHARS for t in between):
            continue
        tail = TAIL.search(turns[first].text)
        head = HEAD.match(turns[second].text)
        if tail is None or head is None:
            continue
        parts = (tail.group("fragment"), head.group("fragment"))
        if (
            min(map(_digits, parts)) < MIN_PART_DIGITS
            or _digits("".join(parts)) < MIN_JOINED_DIGITS
        ):
            continue
        joined = " ".join(parts)
        entity = _entity_of(joined, recognizers, turns[:first])
        key = canonical(joined)
        for text, match in ((turns[first].text, tail), (turns[second].text, head)):
            start, end = match.span("fragment")
            found.setdefault(text, []).append(Finding(start, end, entity, 0.8, key))
    return found


def _entity_of(joined: str, recognizers: list[TurnwatchRecognizer], earlier: list[TurnText]) -> str:
    for recognizer in recognizers:
        for entity, start, end, _ in recognizer.find(joined, None):
            if end - start >= len(joined) - 2:
                return entity
    question = next((t.text for t in reversed(earlier) if t.role is Role.ASSISTANT), None)
    return (asked_for(question) if question else None) or "REFERENCE_NUMBER"
