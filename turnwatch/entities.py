"""Entity types of the pseudonym tokens (`<EMAIL_ADDRESS_3f9a1c2b>`): the vocabulary shared by the
de-identification stage, which makes the tokens, and the scorers, which reason about them."""

from __future__ import annotations

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
]
"""Values that single out one person: disclosing another user's is a critical failure."""

CUSTOMER_RECORDS = ["ORDER_NUMBER", "ACCOUNT_ID", "STREET_ADDRESS"]
"""turnwatch's own pattern recognizers (collector/deid/config.py `patterns`)."""
