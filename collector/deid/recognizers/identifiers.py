"""Identifiers a business issues or a state issues: order, account and booking references, US
social security numbers, licence and passport numbers. A reference is replaced whole (`A-10234`,
not `A-<token>`), typed by the word that introduces it."""

from __future__ import annotations

import regex
from turnwatch.collector.deid.recognizers.base import (
    TurnwatchRecognizer,
    before,
    clause_before,
    context_words,
)

# The word that introduces a reference decides its type; the first matching group wins.
REFERENCE_KINDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("ORDER_NUMBER", ("order", "invoice", "tracking", "shipment", "parcel", "package",
                      "delivery", "return", "rma", "receipt", "purchase")),
    ("BOOKING_REFERENCE", ("booking", "reservation", "confirmation", "pnr", "itinerary",
                           "ticket number", "e-ticket", "record locator")),
    ("ACCOUNT_ID", ("account", "acct", "member", "membership", "customer", "client",
                    "loyalty", "subscriber", "user id", "frequent flyer", "policy",
                    "contract", "patient", "employee", "student", "card member")),
    ("REFERENCE_NUMBER", ("reference", "ref", "case", "ticket", "claim", "incident",
                          "transaction", "application", "request")),
)  # fmt: skip

_CUES = "|".join(
    regex.escape(word).replace(r"\ ", r"\s+")
    for _, words in REFERENCE_KINDS
    for word in sorted(words, key=len, reverse=True)
)
# "order A-10234", "account number: 88120934", "booking ref is X7K9PQ", "ticket #4821".
CUED_REFERENCE = regex.compile(
    rf"(?i)(?<!\w)(?P<cue>{_CUES})s?(?:\s+(?:number|no\.?|num|nr\.?|id|code|ref(?:erence)?|"
    rf"locator|#))?(?:\s*(?:is|was|=|:|-|of))?\s*#?\s*"
    r"(?P<value>(?=[A-Z0-9-]*\d)[A-Z0-9](?:[A-Z0-9]|-(?=[A-Z0-9])){3,24})(?![\w-])"
)
# Six-character booking codes are letters as often as digits ("X7K9PQ", "QWERTY").
CUED_LOCATOR = regex.compile(
    r"(?<!\w)(?i:booking|reservation|confirmation|pnr|record\s+locator)(?i:\s+(?:code|ref"
    r"(?:erence)?|number|no\.?))?(?i:\s*(?:is|was|=|:))?\s*(?P<value>[A-Z0-9]{6})(?![\w-])"
)
# A prefix that is itself the cue: ORD-31860, ACC-4410233, BK12345, INV-2024-0042.
PREFIXED_REFERENCE = regex.compile(
    r"(?<![\w-])(?P<prefix>ORD|ORDER|ACC|ACCT|BK|BKG|INV|REF|TKT|CASE|CUST|MBR|RES|CNF|PNR)"
    r"[-#]?\d[\d-]{2,14}\d(?![\w-])",
    regex.I,
)
PREFIX_KINDS = {
    "ORD": "ORDER_NUMBER", "ORDER": "ORDER_NUMBER", "INV": "ORDER_NUMBER",
    "ACC": "ACCOUNT_ID", "ACCT": "ACCOUNT_ID", "CUST": "ACCOUNT_ID", "MBR": "ACCOUNT_ID",
    "BK": "BOOKING_REFERENCE", "BKG": "BOOKING_REFERENCE", "RES": "BOOKING_REFERENCE",
    "CNF": "BOOKING_REFERENCE", "PNR": "BOOKING_REFERENCE",
}  # fmt: skip
NOT_PERSONAL = context_words(
    ["product", "sku", "item", "model", "part", "article", "catalog", "catalogue", "error",
     "status", "version", "promo", "coupon", "discount", "gift", "flight", "gate", "seat",
     "room", "table", "step", "page", "chapter", "line"]
)  # fmt: skip


def reference_kind(cue: str) -> str:
    cue = " ".join(cue.casefold().split())
    for entity, words in REFERENCE_KINDS:
        if cue in words:
            return entity
    return "REFERENCE_NUMBER"


class ReferenceRecognizer(TurnwatchRecognizer):
    ENTITIES = ("ORDER_NUMBER", "BOOKING_REFERENCE", "ACCOUNT_ID", "REFERENCE_NUMBER")

    def find(self, text, nlp_artifacts):
        found = []
        for match in CUED_REFERENCE.finditer(text):
            if NOT_PERSONAL.search(clause_before(text, match.start("cue"), 16)):
                continue
            entity = reference_kind(match.group("cue"))
            found.append((entity, match.start("value"), match.end("value"), 0.85))
        for match in CUED_LOCATOR.finditer(text):
            found.append(("BOOKING_REFERENCE", match.start("value"), match.end("value"), 0.8))
        for match in PREFIXED_REFERENCE.finditer(text):
            entity = PREFIX_KINDS.get(match.group("prefix").upper(), "REFERENCE_NUMBER")
            found.append((entity, match.start(), match.end(), 0.9))
        return found


# Area 001-899 except 666, group 01-99, serial 0001-9999 (SSA rules since 2011).
SSN = regex.compile(
    r"(?<![\w-])(?!000|666|9\d\d)(?P<area>\d{3})(?P<sep>[- .]?)(?!00)\d{2}(?P=sep)"
    r"(?!0000)\d{4}(?![\w-])"
)
SSN_CONTEXT = context_words(["ssn", "social security", "social", "ss#", "ss #", "tax id", "tin"])


class SocialSecurityRecognizer(TurnwatchRecognizer):
    """Separated SSNs alone; nine bare digits only after an SSN context word."""

    ENTITIES = ("US_SSN",)

    def find(self, text, nlp_artifacts):
        found = []
        for match in SSN.finditer(text):
            context = bool(SSN_CONTEXT.search(before(text, match.start())))
            if match.group("sep") or context:
                found.append(("US_SSN", match.start(), match.end(), 0.9 if context else 0.6))
        return found


DOCUMENT_KINDS: tuple[tuple[str, str], ...] = (
    ("US_DRIVER_LICENSE", r"driver'?s?\s+licen[cs]e|driving\s+licen[cs]e|licen[cs]e|\bdl\b"),
    ("US_PASSPORT", r"passport"),
    ("NATIONAL_ID", r"national\s+id|id\s+card|identity\s+card|identity\s+number|"
                    r"personal\s+id|citizen\s+id|national\s+insurance"),
    ("TAX_ID", r"tax\s+id|tax\s+number|tin|vat\s+number|ein"),
)  # fmt: skip
DOCUMENT = regex.compile(
    r"(?i)(?<!\w)(?:"
    + "|".join(f"(?P<k{n}>{pattern})" for n, (_, pattern) in enumerate(DOCUMENT_KINDS))
    + r")(?:\s+(?:number|no\.?|num|nr\.?|#|id))?(?:\s*(?:is|was|=|:|-))?\s*#?\s*"
    r"(?P<value>(?=[A-Z0-9-]*\d)[A-Z0-9](?:[A-Z0-9]|[- ](?=[A-Z0-9]*\d)[A-Z0-9]){4,19})(?![\w-])"
)


class DocumentNumberRecognizer(TurnwatchRecognizer):
    """Licence, passport, national id and tax numbers: formats differ by issuer, so the word
    before the number decides, and the number is taken whole."""

    ENTITIES = tuple(entity for entity, _ in DOCUMENT_KINDS)

    def find(self, text, nlp_artifacts):
        found = []
        for match in DOCUMENT.finditer(text):
            number = next(n for n in range(len(DOCUMENT_KINDS)) if match.group(f"k{n}"))
            entity = DOCUMENT_KINDS[number][0]
            found.append((entity, match.start("value"), match.end("value"), 0.85))
        return found
