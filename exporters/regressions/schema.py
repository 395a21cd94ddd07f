"""The regression-case JSON Schema (shipped beside this module) and validation against it."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema

SCHEMA_PATH = Path(__file__).with_name("regression-case.schema.json")


class CaseInvalid(ValueError):
    """A case does not match the schema; the message names the path and keyword, not values."""


@cache
def validator() -> jsonschema.Draft202012Validator:
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(
        schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER
    )


def validate_case(case: dict[str, Any]) -> None:
    error = jsonschema.exceptions.best_match(validator().iter_errors(case))
    if error is not None:
        # The message can quote the offending value; keep to the path and the failed keyword.
        where = "/".join(str(part) for part in error.absolute_path) or "(root)"
        raise CaseInvalid(f"{where}: fails {error.validator}")
