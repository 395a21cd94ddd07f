"""`turnwatch sessions` and `turnwatch calibrate` on a store under --data-dir: the list and its
filters, the transcript with findings at their turns, JSON for scripts, reviews in and out as
JSONL (a bad line imports nothing), promotion to the curated dataset, gauges and exit codes."""

from __future__ import annotations

import io
import json

import pytest
from turnwatch.exporters.sessions.database import SqliteDatabase
from turnwatch.exporters.sessions.reviews import FindingLabel, MetricLabel, Review, Verdict
from turnwatch.exporters.sessions.store import SessionStore

from tests.session_records import START, failing, healthy, incident, relevancy, scored
from turnwatch.app.cli import main


def cli(*argv: str) -> tuple[int, str, str]:
    import sys

    out, err = io.StringIO(), io.StringIO()
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err
    try:
        code = main(list(argv))
    finally:
        sys.stdout, sys.stderr = saved
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def data_dir(tmp_path):
    store = SessionStore(SqliteDatabase(tmp_path / "sessions.db"))
    bad = failing("bad-session")
    store.put_incident(incident(bad, scored(bad, [relevancy(0.5, turns=(2,))])))
    good = healthy("good-session", minutes=5)
    store.put_session(good)
    store.put_score(scored(good, [relevancy(1.0)]))
    return tmp_path


def test_list_filters_and_json(data_dir):
    code, out, _ = cli("sessions", "--data-dir", str(data_dir), "list")
    assert code == 0
    lines = out.splitlines()
    assert lines[1].startswith("good-session") and "success" in lines[1]
    assert lines[2].startswith("bad-session") and "FAILURE" in lines[2]
    assert "approval, forbidden_action, outcome" in lines[2]
    assert lines[-1] == "2 of 2 session revision(s)"
    code, out, _ = cli("sessions", "list", "--data-dir", str(data_dir), "--critical", "--json")
    assert [item["session_id"] for item in json.loads(out)["items"]] == ["bad-session"]
    _, out, _ = cli("sessions", "list", "--data-dir", str(data_dir), "--json", "--version", "1.5.0",
                    "--since", "2026-11-01T12:01")  # fmt: skip
    assert [item["session_id"] for item in json.loads(out)["items"]] == ["good-session"]


def test_show_prints_each_finding_at_its_turn_and_the_first_broken_transition(data_dir):
    code, out, _ = cli("sessions", "show", "bad-session", "--data-dir", str(data_dir))
    assert code == 0
    turn_one = out.index("[1] assistant  <== first broken transition (forbidden_action)")
    turn_two = out.index("[2] assistant")
    finding = out.index("!! CRITICAL critical forbidden_action: forbidden action refund_over_limit")
    assert turn_one < finding < turn_two
    assert "-> tool issue_refund" in out and '"amount": 900' in out
    assert "evidence: tool_name=issue_refund, rule=refund_over_limit" in out
    assert "turn_relevancy = 0.50 [heuristic] (turns 2): 0.50 of windows relevant" in out
    assert "flagged: yes (critical_failure, joint_failure)" in out
    code, out, _ = cli("sessions", "show", "bad-session", "--data-dir", str(data_dir), "--json")
    view = json.loads(out)
    assert view["turns"][1]["findings"][0]["evidence"]["tool_name"] == "issue_refund"
    assert view["turns"][1]["first_broken"] == "forbidden_action"
    code, _, err = cli("sessions", "show", "nope", "--data-dir", str(data_dir))
    assert code == 2 and "no stored session nope" in err


def test_list_and_show_by_resource_attribute(tmp_path, capsys):
    store = SessionStore(SqliteDatabase(tmp_path / "sessions.db"))
    for number, environment in enumerate(["prod", "prod", "canary"]):
        session = healthy(f"{environment}-{number}", minutes=number)
        session.provenance.resource_attributes = {
            "deployment.environment": environment,
            "service.namespace": "shop",
        }
        store.put_session(session)
        store.put_score(scored(session))
    listed = ("sessions", "list", "--data-dir", str(tmp_path), "--json")
    _, out, _ = cli(*listed, "--attribute", "deployment.environment=prod")
    assert [item["session_id"] for item in json.loads(out)["items"]] == ["prod-1", "prod-0"]
    _, out, _ = cli(*listed, "--attribute", "deployment.environment=canary",
                    "--attribute", "service.namespace=shop")  # fmt: skip
    [canary] = json.loads(out)["items"]
    assert canary["attributes"] == {"deployment.environment": "canary", "service.namespace": "shop"}
    _, out, _ = cli("sessions", "show", "canary-2", "--data-dir", str(tmp_path))
    assert "resource: deployment.environment=canary, service.namespace=shop" in out
    capsys.readouterr()
    for bad, message in (
        ("deployment.environment", "'deployment.environment' is not key=value"),
        ("a.b=1,c.d=2", "'a.b=1,c.d=2' is not key=value"),
        ("environment=prod", "'environment' is not a resource attribute key"),
    ):
        with pytest.raises(SystemExit) as exited:
            main([*listed, "--attribute", bad])
        assert exited.value.code == 2 and message in capsys.readouterr().err


def test_a_missing_store_is_a_message_not_a_traceback(tmp_path):
    code, _, err = cli("sessions", "list", "--data-dir", str(tmp_path / "empty"))
    assert code == 2 and "no session store at" in err


def review(verdict: Verdict, reviewer: str = "ana", label: str = "fail") -> Review:
    return Review(
        session_id="bad-session",
        revision=1,
        reviewer=reviewer,
        reviewed_at=START,
        findings=[FindingLabel(check="forbidden_action", turn_index=1, verdict=verdict)],
        metrics=[MetricLabel(metric="turn_relevancy", turn_index=2, label=label)],
        note="refund over the limit",
    )


def test_reviews_round_trip_as_jsonl_and_a_bad_line_imports_nothing(data_dir, tmp_path):
    good = tmp_path / "reviews.jsonl"
    good.write_text(review(Verdict.CONFIRMED).model_dump_json() + "\n\n", encoding="utf-8")
    code, out, _ = cli("sessions", "import-reviews", str(good), "--data-dir", str(data_dir))
    assert (code, out.strip()) == (0, "imported 1 review(s)")
    bad = tmp_path / "bad.jsonl"
    line = review(Verdict.CONFIRMED, reviewer="bo").model_dump_json()
    bad.write_text(line + "\n" + '{"session_id": "x"}\n', encoding="utf-8")
    code, _, err = cli("sessions", "import-reviews", str(bad), "--data-dir", str(data_dir))
    assert code == 2 and "line 2: revision: Field required" in err
    exported = tmp_path / "out.jsonl"
    cli("sessions", "export-reviews", "-o", str(exported), "--data-dir", str(data_dir))
    [only] = exported.read_text(encoding="utf-8").splitlines()
    assert Review.model_validate_json(only) == review(Verdict.CONFIRMED)


def test_promotion_needs_a_confirmed_finding_and_bumps_the_dataset_version(data_dir, tmp_path):
    code, _, err = cli("sessions", "promote", "bad-session", "--data-dir", str(data_dir))
    assert code == 2 and "no review confirmed" in err
    file = tmp_path / "r.jsonl"
    file.write_text(review(Verdict.CONFIRMED).model_dump_json(), encoding="utf-8")
    cli("sessions", "import-reviews", str(file), "--data-dir", str(data_dir))
    code, out, _ = cli("sessions", "promote", "bad-session", "--data-dir", str(data_dir))
    assert code == 0 and "(curated-regressions-1, new_case)" in out
    [case] = (data_dir / "regressions" / "curated").glob("rc-*.json")
    assert json.loads(case.read_text())["dataset_version"] == "curated-regressions-1"
    _, out, _ = cli("sessions", "promote", "bad-session", "--data-dir", str(data_dir))
    assert "curated-regressions-2" in out


def test_calibrate_prints_a_table_writes_gauges_and_exits_1_below_the_minimum(data_dir, tmp_path):
    file = tmp_path / "r.jsonl"
    passed = review(Verdict.CONFIRMED, label="pass").model_copy(
        update={"session_id": "good-session", "findings": []}
    )
    lines = [review(Verdict.CONFIRMED).model_dump_json(), passed.model_dump_json()]
    file.write_text("\n".join(lines), encoding="utf-8")
    cli("sessions", "import-reviews", str(file), "--data-dir", str(data_dir))
    gauges = tmp_path / "agreement.prom"
    code, out, _ = cli("calibrate", "--data-dir", str(data_dir), "--prometheus", str(gauges))
    assert code == 0
    assert "| forbidden_action | all | 2 | 1 | 1.00 [1.00, 1.00] | 1.00 [1.00, 1.00] |" in out
    assert "| turn_relevancy | all | heuristic | 2 | 1 | 1.00 [" in out
    assert (
        'turnwatch_judge_agreement{metric="turn_relevancy",slice="all"} 1.0' in gauges.read_text()
    )
    minimum = ("--min-agreement", "turn_relevancy=1.01")
    code, _, err = cli("calibrate", "--data-dir", str(data_dir), *minimum)
    assert code == 1 and "turn_relevancy: agreement below the minimum 1.01" in err
    code, _, err = cli("calibrate", "--data-dir", str(data_dir), "--min-agreement", "nonsense")
    assert code == 2 and "expected METRIC=KAPPA" in err
