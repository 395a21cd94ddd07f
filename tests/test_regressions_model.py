"""The regression case as a model: its JSON Schema is generated from it, files written by an older
turnwatch load and take new occurrences, and a malformed file is skipped without stopping the
store."""

from __future__ import annotations

import json
import logging
import shutil
from datetime import UTC, datetime
from pathlib import Path

from turnwatch.exporters.regressions.config import RegressionConfig
from turnwatch.exporters.regressions.model import Case
from turnwatch.exporters.regressions.schema import SCHEMA_PATH, schema_text, validate_case
from turnwatch.exporters.regressions.store import regressions_dir
from turnwatch.scorers.flagging import Flagger

from tests.test_regressions_cases import incident, refund_over_limit, store_at
from tests.test_scorers_builders import BOB, EMAIL_B, bot, session, support_scorer, user
from turnwatch.incidents import Incident

FORMAT_1 = Path(__file__).parent / "data" / "regression-case-format-1.json"


def without_empty_evidence(findings: dict) -> dict:
    """The findings as format 1 wrote them, before findings carried evidence."""
    listed = [*findings["critical_failures"]]
    listed += [finding for failed in findings["failed_checks"] for finding in failed["findings"]]
    for finding in listed:
        assert finding.pop("evidence") == {}
    return findings


def test_the_committed_schema_is_the_one_generated_from_the_model():
    # Regenerate with `python -m turnwatch.exporters.regressions.schema` after changing the model.
    assert SCHEMA_PATH.read_text(encoding="utf-8") == schema_text()


def test_a_built_case_matches_the_schema_and_reads_back_equal(tmp_path):
    store, _ = store_at(tmp_path)
    assert store.record(incident(Flagger(RegressionConfig()), refund_over_limit())) == "new_case"
    [file] = regressions_dir(tmp_path).glob("rc-*.json")
    data = json.loads(file.read_text(encoding="utf-8"))
    validate_case(data)
    case = Case.model_validate(data)
    assert case.to_json() == data
    assert data["first_seen"].endswith("+00:00")  # the time format case files always had
    refund = data["turns"][1]
    assert set(refund) == {"turn_id", "role", "content", "facts_revealed", "tool_calls"}
    assert refund["content"] is None  # written even when empty; unset optional keys are not


def test_a_case_file_of_format_1_loads_and_takes_a_recurrence(tmp_path):
    legacy = json.loads(FORMAT_1.read_text(encoding="utf-8"))
    directory = regressions_dir(tmp_path)
    directory.mkdir()
    shutil.copy(FORMAT_1, directory / f"{legacy['case_id']}.json")
    store, _ = store_at(tmp_path)

    [listed] = store.summaries()
    assert (listed.id, listed.occurrence_count) == (legacy["case_id"], 1)
    assert listed.to_json()["last_seen"] == legacy["last_seen"]
    case = store.get(legacy["case_id"])
    assert case is not None
    assert case.initial_state.known_token_owners == {EMAIL_B: BOB}
    # Evidence did not exist then: the findings read back without it, nothing else changes.
    upgraded = case.to_json()
    without_empty_evidence(upgraded["findings"])
    assert upgraded == legacy

    # The same failure again (the signature of the legacy case) counts as a recurrence.
    scorer = support_scorer()
    for visit in ("s-b1", "s-b2"):  # supplied twice by Bob alone: certainly his
        scorer.score(session(user(f"I am {EMAIL_B}"), bot("Noted."), user_id=BOB, session_id=visit))
    again = refund_over_limit("s-again")
    again.turns[-1].text = f"Your refund of 900 is done; I also mailed {EMAIL_B}."
    record = scorer.score(again)
    flagged = Incident.of(again, record, Flagger(RegressionConfig())(again, record))
    assert store.record(flagged, datetime(2025, 3, 3, tzinfo=UTC)) == "recurrence"
    merged = json.loads((directory / f"{legacy['case_id']}.json").read_text(encoding="utf-8"))
    validate_case(merged)
    assert merged["occurrence_count"] == 2
    assert [o["session_id"] for o in merged["occurrences"]] == ["s-leak", "s-again"]
    # The exemplar stays the first session: its findings are the legacy ones.
    assert without_empty_evidence(merged["findings"]) == legacy["findings"]


def test_a_malformed_case_file_is_skipped_and_named_not_quoted(tmp_path, caplog):
    store, _ = store_at(tmp_path)
    assert store.record(incident(Flagger(RegressionConfig()), refund_over_limit())) == "new_case"
    directory = regressions_dir(tmp_path)
    (directory / "rc-00000000000000aa.json").write_text('{"case_id": "secret-value"}')
    (directory / "rc-00000000000000bb.json").write_text("{not json")
    with caplog.at_level(logging.WARNING, logger="turnwatch.regressions"):
        reopened, _ = store_at(tmp_path)
        summaries = reopened.summaries()
    assert len(summaries) == 1
    assert reopened.get("rc-00000000000000aa") is None
    skipped = {record.file: record.error for record in caplog.records}
    assert set(skipped) == {"rc-00000000000000aa.json", "rc-00000000000000bb.json"}
    assert skipped["rc-00000000000000aa.json"] == "case_id: string_pattern_mismatch"
    assert "secret-value" not in caplog.text
