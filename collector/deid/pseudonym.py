"""Keyed pseudonyms: `<ENTITY_TYPE_xxxxxxxx>`, the hex part an HMAC-SHA256 of the value's
canonical form, whatever type the value was detected as.

The canonical form depends on the value alone, so one value gets one hex part in every place
and format: "+1 (415) 867-5309" and "415.867.5309" are one E.164 number, "4111-1111-1111-1111"
and "4111 1111 1111 1111" one card, "DE89 3704 0044 0532 0130 00" and "de89370400440532013000"
one IBAN, "Jane.Doe@X.com" and "jane.doe@x.com" one address, "A-10234" and "a10234" one
reference; a card the NER model typed as a date still shares its card's hex. The entity type
stays on the token as a label only. A name part carries the key of its person
(`turnwatch.collector.deid.people`): "Maria", "M. Garcia" and "Maria Garcia" are one person.
Without the key there is no way back: the token is a truncated MAC, not an encryption.
"""

from __future__ import annotations

import hashlib
import hmac
import unicodedata
from collections.abc import Callable, Iterable

import regex
from turnwatch.collector.deid.recognizers.numbers import e164
from turnwatch.collector.deid.secret import derived_key

from turnwatch.tokens import format_token

EMAIL = regex.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")
SEPARATORS_MATTER = regex.compile(r"(?:\d{1,3}\.){3}\d{1,3}|\d{1,4}[./]\d{1,2}[./]\d{1,4}")
DIGITS_ONLY = regex.compile(r"\+?[\d\s().\-/]*\d[\d\s().\-/]*")
CODE = regex.compile(r"[\p{L}\d][\p{L}\d\s\-./#]*", regex.V1)
CODE_SEPARATORS = regex.compile(r"[\s\-./#]+")
EDGE_PUNCTUATION = "\"'“”‘’()[]<>.,;:!?"
POSSESSIVE = regex.compile(r"['’]s?$")
MIN_PHONE_DIGITS, MAX_PHONE_DIGITS = 7, 15
E164 = regex.compile(r"\+\d+")
ASCII_NON_DIGITS = str.maketrans("", "", "".join(chr(c) for c in range(128) if not 48 <= c <= 57))


def canonical(value: str, phone_regions: list[str]) -> str:
    """The form of `value` that its token is keyed by (see the module docstring)."""
    value = unicodedata.normalize("NFKC", value).strip().strip(EDGE_PUNCTUATION).strip()
    if EMAIL.fullmatch(value):
        return value.casefold()
    if SEPARATORS_MATTER.fullmatch(value):
        # An IP address or a date: "77.12.104.3" and "77.121.04.3" are different values.
        return value
    if DIGITS_ONLY.fullmatch(value):
        digits = _digits(value)
        if MIN_PHONE_DIGITS <= len(digits) <= MAX_PHONE_DIGITS:
            number = e164(value, phone_regions)
            if number is not None:
                return number
        return digits
    if any(ch.isdigit() for ch in value) and CODE.fullmatch(value):
        return CODE_SEPARATORS.sub("", value).casefold()
    words = " ".join(value.replace("’", "'").casefold().split())
    return POSSESSIVE.sub("", words) or words


def _digits(value: str) -> str:
    return "".join(ch for ch in value if ch.isdigit())


class KnownValues:
    """Which of a session's known canonical values a piece of text has, computing the canonical
    form (a phone parse, for a run of digits) only of pieces that can have a known one.

    Every canonical form but E.164 keeps the value's digits in order (digits are neither case
    folded nor stripped, and an ASCII value is its own NFKC form), so an ASCII piece whose
    digits are no known value's digits has a known value only as a phone number: when one is
    known in E.164 and the piece has a phone's count of digits and no letter. Other pieces are
    always computed.
    """

    def __init__(self, keys: Iterable[str], canonical: Callable[[str], str]) -> None:
        self._keys = set(keys)
        self._canonical = canonical
        self._digits = {_digits(key) for key in self._keys}
        self._phones = any(E164.fullmatch(key) for key in self._keys)

    def get(self, value: str) -> str | None:
        if value.isascii():
            digits = value.translate(ASCII_NON_DIGITS)
            if digits not in self._digits and not (
                self._phones
                and MIN_PHONE_DIGITS <= len(digits) <= MAX_PHONE_DIGITS
                and not any(ch.isalpha() for ch in value)
            ):
                return None
        key = self._canonical(value)
        return key if key in self._keys else None


class Pseudonymizer:
    def __init__(self, secret: bytes, phone_regions: list[str]) -> None:
        self._key = derived_key(secret, "pseudonym")
        self._id_key = derived_key(secret, "ids")
        self.phone_regions = phone_regions

    def canonical(self, value: str) -> str:
        return canonical(value, self.phone_regions)

    def token_for(self, entity: str, canonical_value: str) -> str:
        data = canonical_value.encode("utf-8", "surrogatepass")
        return format_token(entity, hmac.new(self._key, data, hashlib.sha256).hexdigest())

    def token(self, entity: str, value: str) -> str:
        return self.token_for(entity, self.canonical(value))

    def keyed_id(self, value: str) -> str:
        """An opaque id for a trace or tool-call id: the same in every record, 32 hex digits."""
        data = value.encode("utf-8", "surrogatepass")
        return hashlib.blake2b(data, digest_size=16, key=self._id_key).hexdigest()
