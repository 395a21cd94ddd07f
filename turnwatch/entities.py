"""Entity types of the pseudonym tokens (`<EMAIL_ADDRESS_3f9a1c2b>`): the vocabulary shared by the
de-identification stage, which makes the tokens, and the scorers, which reason about them."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator

ENTITY_PATTERN = r"[A-Z][A-Z0-9_]{1,39}"
"""An entity type: an upper-case identifier of 2 to 40 characters (it is also the token prefix)."""

_ENTITY = re.compile(ENTITY_PATTERN)


def entity_name(value: str) -> str:
    if not _ENTITY.fullmatch(value):
        raise ValueError(
            f"entity types are upper-case identifiers (A-Z, 0-9, _; 2-40 characters), got {value!r}"
        )
    return value


EntityName = Annotated[str, AfterValidator(entity_name)]
"""A configured entity type (de-identification patterns, contracts, disclosure entities)."""

PERSONAL_IDENTIFIERS = [
    "PERSON",
    "EMAIL_ADDRESS",
    "PHONE_NUMBER",
    "CREDIT_CARD",
    "US_SSN",
    "US_ITIN",
    "US_PASSPORT",
    "US_DRIVER_LICENSE",
    "US_BANK_NUMBER",
    "IBAN_CODE",
    "IP_ADDRESS",
    "UK_NHS",
    "NATIONAL_ID",
    "TAX_ID",
    "USERNAME",
]
"""Values that single out one person: disclosing another user's is a critical failure."""

CUSTOMER_RECORDS = [
    "ORDER_NUMBER",
    "ACCOUNT_ID",
    "BOOKING_REFERENCE",
    "REFERENCE_NUMBER",
    "STREET_ADDRESS",
]
"""References a business issues to its customers, and their postal addresses (turnwatch's own
recognizers, collector/deid/recognizers/)."""

CREDENTIALS = ["PASSWORD", "ONE_TIME_CODE", "API_KEY"]
"""Secrets typed in chat: replaced like personal data, never disclosure evidence."""
