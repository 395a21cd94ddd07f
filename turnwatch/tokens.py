"""The pseudonym token format, `<ENTITY_TYPE_xxxxxxxx>`: written by de-identification, read by the
scorers and the regression cases. The hex part is the value's keyed digest, the same for a value
detected as two entity types, so it alone says whether two tokens stand for one value."""

from __future__ import annotations

import re

from turnwatch.entities import ENTITY_PATTERN

HEX_LENGTH = 8

TOKEN = re.compile(rf"<({ENTITY_PATTERN})_([0-9a-f]{{{HEX_LENGTH}}})>")
"""A token in text; group 1 is the entity type, group 2 the value part."""


def format_token(entity: str, digest_hex: str) -> str:
    """The token for a value of `entity` whose keyed digest (lower-case hex) is `digest_hex`."""
    return f"<{entity}_{digest_hex[:HEX_LENGTH]}>"


def value_part(token: str) -> str:
    """The hex part of a well-formed token."""
    return token[-HEX_LENGTH - 1 : -1]
