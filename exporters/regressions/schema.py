"""The regression-case JSON Schema: generated from `model.Case`, shipped beside this module, and
checked against every case before it is written.

`python -m turnwatch.exporters.regressions.schema` rewrites `regression-case.schema.json` from the
model; a test fails when the committed file and the model disagree. Validating the written JSON
against the published schema (not only building the model) checks the file as readers of the
schema will see it.
"""

from __future__ import annotations

import json
import sys
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
from turnwatch.exporters.regressions.model import CASE_FORMAT, Case

SCHEMA_PATH = Path(__file__).with_name("regression-case.schema.json")


class CaseInvalid(ValueError):
    """A case does not match the schema; the message names the path and keyword, not values."""


def case_json_schema() -> dict[str, Any]:
    schema = Case.model_json_schema()
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"https://turnwatch.dev/schemas/regression-case-{CASE_FORMAT}.json",
        **schema,
        "title": "turnwatch regression case",
        "description": (
            "A flagged production session as a versioned conversation regression: the dataset "
            "schema of the multi-turn evaluation guide plus provenance, findings and "
            "occurrences. Content is de-identified (PII replaced by tokens such as "
            "<EMAIL_ADDRESS_3f9a1c2b>). Generated from turnwatch's Case model."
        ),
    }


def schema_text() -> str:
    return json.dumps(case_json_schema(), indent=2, ensure_ascii=False) + "\n"


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


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else SCHEMA_PATH
    target.write_text(schema_text(), encoding="utf-8")
