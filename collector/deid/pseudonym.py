"""Keyed pseudonyms: `<ENTITY_TYPE_xxxxxxxx>` from an HMAC-SHA256 of the normalised value.

Normalising first makes "+1 (415) 555-0100" and "415-555-0100", "Jane.Doe@X.com" and
"jane.doe@x.com", or "12 Main St." and "12 main st", the same value for the checks downstream. The
value alone (not its type) is hashed, so a value detected as two types still shares its hex part.
Without the key there is no way back: the token is a truncated MAC, not an encryption.
"""

from __future__ import annotations

import hashlib
import hmac
import unicodedata

import phonenumbers

from turnwatch.tokens import format_token

DIGIT_ENTITIES = frozenset({"CREDIT_CARD", "US_SSN", "US_ITIN", "US_BANK_NUMBER", "UK_NHS"})


def normalise(entity: str, value: str) -> str:
    value = unicodedata.normalize("NFKC", value).strip()
    if entity in DIGIT_ENTITIES:
        digits = "".join(ch for ch in value if ch.isdigit())
        return digits or value
    if entity == "PHONE_NUMBER":
        return _phone(value)
    if entity == "IBAN_CODE":
        return "".join(value.split()).upper()
    # "12 Main St." closing a sentence and "12 Main St" in a record are one address.
    return " ".join(value.casefold().split()).rstrip(".")


def _phone(value: str) -> str:
    try:
        number = phonenumbers.parse(value, "US")
    except phonenumbers.NumberParseException:
        return "".join(ch for ch in value if ch.isdigit()) or value
    return phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.E164)


class Pseudonymizer:
    def __init__(self, secret: bytes) -> None:
        self._key = hashlib.sha256(b"turnwatch.deid.pseudonym\x00" + secret).digest()

    def token(self, entity: str, value: str) -> str:
        normalised = normalise(entity, value).encode("utf-8", "surrogatepass")
        digest = hmac.new(self._key, normalised, hashlib.sha256).hexdigest()
        return format_token(entity, digest)
