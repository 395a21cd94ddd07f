"""Numbers with a structure to check: payment cards (Luhn and issuer ranges), phone numbers
(libphonenumber, national formats in the configured regions), IBANs (ISO 13616 mod-97) and
public IP addresses. A candidate that fails its check is not reported: the check is what makes a
16-digit order number different from a card."""

from __future__ import annotations

import contextlib
import contextvars
import ipaddress
from collections.abc import Iterator

import phonenumbers
import regex
from turnwatch.collector.deid.recognizers.base import (
    TurnwatchRecognizer,
    before,
    clause_before,
    context_words,
)

# Issuer ranges (IIN prefixes, inclusive) and the lengths each issues; from the networks'
# published ranges. Visa 13-19, Mastercard 51-55 and 2221-2720, Amex, Discover, JCB, Diners,
# Maestro, UnionPay, Mir, RuPay, Verve, Troy, UATP.
CARD_RANGES: tuple[tuple[int, int, tuple[int, ...]], ...] = (
    (4, 4, (13, 16, 19)),
    (51, 55, (16,)),
    (2221, 2720, (16,)),
    (34, 34, (15,)),
    (37, 37, (15,)),
    (6011, 6011, (16, 17, 18, 19)),
    (644, 649, (16, 17, 18, 19)),
    (65, 65, (16, 17, 18, 19)),
    (622126, 622925, (16, 17, 18, 19)),
    (3528, 3589, (16, 17, 18, 19)),
    (300, 305, (14, 15, 16, 17, 18, 19)),
    (309, 309, (14, 15, 16, 17, 18, 19)),
    (36, 36, (14, 15, 16, 17, 18, 19)),
    (38, 39, (14, 15, 16, 17, 18, 19)),
    (50, 50, (12, 13, 14, 15, 16, 17, 18, 19)),
    (56, 69, (12, 13, 14, 15, 16, 17, 18, 19)),
    (62, 62, (16, 17, 18, 19)),
    (2200, 2204, (16, 17, 18, 19)),
    (60, 60, (16,)),
    (81, 82, (16,)),
    (508, 508, (16,)),
    (506099, 506198, (16, 18, 19)),
    (650002, 650027, (16, 18, 19)),
    (9792, 9792, (16,)),
    (1, 1, (15,)),
)

# Digits in groups separated by at most one space or dash, as cards are typed and printed.
CARD_CANDIDATE = regex.compile(r"(?<![\w.,/-])\d(?:[ -]?\d){11,18}(?![\w]|[.,/-]\d)")
PRODUCT_CONTEXT = context_words(
    ["sku", "ean", "upc", "gtin", "isbn", "barcode", "product", "item", "model", "part", "article"]
)


def luhn_valid(digits: str) -> bool:
    total = 0
    for position, char in enumerate(reversed(digits)):
        value = int(char)
        if position % 2 == 1:
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return total % 10 == 0


def issued_card_number(digits: str) -> bool:
    for low, high, lengths in CARD_RANGES:
        prefix = int(digits[: len(str(low))])
        if low <= prefix <= high and len(digits) in lengths:
            return True
    return False


class CardNumberRecognizer(TurnwatchRecognizer):
    ENTITIES = ("CREDIT_CARD",)

    def find(self, text, nlp_artifacts):
        found = []
        for match in CARD_CANDIDATE.finditer(text):
            digits = "".join(ch for ch in match.group() if ch.isdigit())
            if not (luhn_valid(digits) and issued_card_number(digits)):
                continue
            if PRODUCT_CONTEXT.search(clause_before(text, match.start(), 24)):
                continue
            found.append(("CREDIT_CARD", match.start(), match.end(), 0.95))
        return found


# A run that could be a phone number: an optional + or (, then digits with the separators people
# type. libphonenumber decides; the run only keeps it from parsing every digit in the text.
PHONE_CANDIDATE = regex.compile(
    r"(?<![\w+])(?:\+|00)?\(?\d[\d \t().\-/]{5,22}\d(?:[ \t]*(?:ext\.?|x|#)[ \t]*\d{1,6})?(?![\w])"
)
PHONE_CONTEXT = context_words(
    ["phone", "call", "tel", "telephone", "mobile", "cell", "reach", "number", "whatsapp",
     "fax", "text", "sms", "contact", "landline", "ring"]
)  # fmt: skip
MIN_PHONE_DIGITS = 7
IPV4 = regex.compile(r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?![\w]|\.\d)")


class PhoneNumberRecognizer(TurnwatchRecognizer):
    """Valid numbers of any configured region, or international numbers (+ or 00)."""

    ENTITIES = ("PHONE_NUMBER",)

    def __init__(self, regions: list[str]) -> None:
        super().__init__()
        self.regions = regions

    def find(self, text, nlp_artifacts):
        found = []
        for match in PHONE_CANDIDATE.finditer(text):
            if PRODUCT_CONTEXT.search(clause_before(text, match.start(), 24)):
                continue
            cued = bool(PHONE_CONTEXT.search(before(text, match.start())))
            # The run may carry a number typed after the phone ("(206) 534-0166 10.2.3.4"):
            # shorter runs are tried, a word at a time, until one is a phone number.
            candidate = match.group().rstrip(" .-/(")
            while sum(ch.isdigit() for ch in candidate) >= MIN_PHONE_DIGITS:
                score = self._score(candidate, cued)
                if score is not None:
                    end = match.start() + len(candidate)
                    found.append(("PHONE_NUMBER", match.start(), end, score))
                    break
                shorter = PHONE_LAST_GROUP.sub("", candidate).rstrip(" .-/(")
                if shorter == candidate:
                    break
                candidate = shorter
        return found

    def _score(self, candidate: str, cued: bool) -> float | None:
        if _looks_like_a_date(candidate) or IPV4.fullmatch(candidate):
            return None
        if phone_region(candidate, self.regions) is not None:
            return 0.9 if cued else 0.7
        if cued and possible_phone(candidate, self.regions):
            return 0.6
        return None


PHONE_LAST_GROUP = regex.compile(r"[ \t]+\S+$")


DATE_SHAPE = regex.compile(r"\d{1,4}[./-]\d{1,2}[./-]\d{2,4}")


def _looks_like_a_date(candidate: str) -> bool:
    return bool(DATE_SHAPE.fullmatch(candidate.strip()))


def phone_region(value: str, regions: list[str]) -> str | None:
    """The first region in which `value` is a valid phone number, or None."""
    valid = _valid_phone(value, regions)
    return valid[0] if valid is not None else None


ValidPhone = tuple[str, phonenumbers.PhoneNumber] | None
PhoneParses = dict[tuple[str, ...], ValidPhone]
_phone_parses: contextvars.ContextVar[PhoneParses | None] = contextvars.ContextVar(
    "phone_parses", default=None
)


@contextlib.contextmanager
def remembered_phone_parses() -> Iterator[None]:
    """Within it, each value is parsed as a phone number once: a session's numbers are parsed
    by the phone recognizer, by the split-value recognizers and for their canonical forms, so
    about two parses in five repeat one (on the pipeline benchmark's messages). Forgotten on
    leaving (one session), so no value outlives its session in memory; per thread, like the
    session it serves."""
    token = _phone_parses.set({})
    try:
        yield
    finally:
        _phone_parses.reset(token)


def _valid_phone(value: str, regions: list[str]) -> ValidPhone:
    parses = _phone_parses.get()
    if parses is None:
        return _parse_valid_phone(value, regions)
    key = (value, *regions)
    if key not in parses:
        parses[key] = _parse_valid_phone(value, regions)
    return parses[key]


def _parse_valid_phone(value: str, regions: list[str]) -> ValidPhone:
    for region in regions:
        try:
            number = phonenumbers.parse(value, region)
        except phonenumbers.NumberParseException:
            return None
        if phonenumbers.is_valid_number(number):
            return region, number
    return None


def possible_phone(value: str, regions: list[str]) -> bool:
    """Whether `value` has a phone number's length in one of `regions` (after a phone word,
    a number outside the known ranges is still someone's number)."""
    for region in regions:
        try:
            if phonenumbers.is_possible_number(phonenumbers.parse(value, region)):
                return True
        except phonenumbers.NumberParseException:
            return False
    return False


def e164(value: str, regions: list[str]) -> str | None:
    """The E.164 form of a phone number valid in one of `regions`, else None."""
    valid = _valid_phone(value, regions)
    if valid is None:
        return None
    return phonenumbers.format_number(valid[1], phonenumbers.PhoneNumberFormat.E164)


# Country code, check digits, then 10-30 letters or digits, compact or in groups of four.
IBAN_CANDIDATE = regex.compile(r"(?<![\w])[A-Z]{2}\d{2}(?:[ -]?[A-Z0-9]){10,30}(?![\w])", regex.I)
MIN_IBAN, MAX_IBAN = 15, 34


def iban_valid(compact: str) -> bool:
    if not MIN_IBAN <= len(compact) <= MAX_IBAN or not compact[:2].isalpha():
        return False
    rearranged = compact[4:] + compact[:4]
    try:
        return int("".join(str(int(ch, 36)) for ch in rearranged)) % 97 == 1
    except ValueError:
        return False


class IbanCodeRecognizer(TurnwatchRecognizer):
    ENTITIES = ("IBAN_CODE",)

    def find(self, text, nlp_artifacts):
        found = []
        for match in IBAN_CANDIDATE.finditer(text):
            # Greedy groups may run into a following code word: back off a group at a time.
            value = match.group()
            while value:
                compact = regex.sub(r"[ -]", "", value).upper()
                if iban_valid(compact):
                    found.append(("IBAN_CODE", match.start(), match.start() + len(value), 0.95))
                    break
                value = regex.sub(r"[ -]?[A-Z0-9]$", "", value, flags=regex.I)
                if len(regex.sub(r"[ -]", "", value)) < MIN_IBAN:
                    break
        return found


IPV6 = regex.compile(r"(?<![\w:])(?:[0-9a-f]{0,4}:){2,7}[0-9a-f]{0,4}(?![\w:])", regex.I)
VERSION_CONTEXT = context_words(["version", "v", "release", "build", "firmware", "app"])


class IpAddressRecognizer(TurnwatchRecognizer):
    """Public addresses only: a private, loopback or documentation-free reserved address
    (10.0.0.1, 192.168.1.1, 127.0.0.1) names a network, not a person."""

    ENTITIES = ("IP_ADDRESS",)

    def find(self, text, nlp_artifacts):
        found = []
        for pattern in (IPV4, IPV6):
            for match in pattern.finditer(text):
                try:
                    address = ipaddress.ip_address(match.group())
                except ValueError:
                    continue
                if not address.is_global:
                    continue
                if VERSION_CONTEXT.search(before(text, match.start(), 12)):
                    continue
                found.append(("IP_ADDRESS", match.start(), match.end(), 0.9))
        return found
