"""`turnwatch gate` on replay result files written by `turnwatch regressions replay --repeat K
--out FILE` against a scripted support chatbot on loopback in two versions: v2 rewords the
address and refund conversations (harmless) and plants a regression on the tool-failure slice."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from turnwatch.exporters.gate.stats import bootstrap, power
from turnwatch.exporters.regressions.results import load_replay
from turnwatch.exporters.sessions.database import SqliteDatabase
from turnwatch.exporters.sessions.store import SessionStore

from tests.session_records import failing, healthy, scored
from tests.support_bot import cases, serve
from tests.test_scorers_builders import SUPPORT_CONTRACT
from turnwatch.app.cli import main


def replay(
    tmp_path: Path,
    version: str,
    replayed,
    repeat: int = 1,
    name: str = "",
    extra: tuple[str, ...] = (),
) -> Path:
    scenarios = tmp_path / f"cases-{name or version}"
    scenarios.mkdir(exist_ok=True)
    for case in replayed:
        (scenarios / f"{case.conversation_id}.json").write_text(case.model_dump_json())
    config = tmp_path / "turnwatch.yaml"
    config.write_text(f"scorers:\n  contracts_dir: {SUPPORT_CONTRACT.parent}\n")
    out = tmp_path / f"{name or version}.json"
    with serve(version) as bot:
        code = main(
            [
                *("regressions", "--config", str(config), "--data-dir", str(tmp_path)),
                *("replay", "--target", bot.url, "--scenario", str(scenarios)),
                *("--repeat", str(repeat), "--out", str(out), "--release", version),
                *extra,
            ]
        )
    assert code != 2, "the replay did not run"
    return out


def gate(capsys, baseline: Path, candidate: Path, *options: str) -> tuple[int, str]:
    capsys.readouterr()
    code = main(["gate", "--baseline", str(baseline), "--candidate", str(candidate), *options])
    return code, capsys.readouterr().out


def test_a_regression_on_one_slice_fails_the_gate_naming_the_slice(tmp_path, capsys):
    replayed = cases(addresses=4, refunds=3, statuses=5)
    before = replay(tmp_path, "v1", replayed, repeat=2)
    after = replay(tmp_path, "v2", replayed, repeat=2)
    markdown = tmp_path / "gate.md"
    code, out = gate(capsys, before, after, "--markdown", str(markdown))
    assert code == 1, out
    assert out.startswith("gate: REGRESSION (exit 1): v2 against v1, paired by case")
    code, out = gate(capsys, before, after, "--json")
    report = json.loads(out)
    rules = {(rule["rule"], rule["slice"]): rule for rule in report["rules"]}
    sliced = rules[("joint_success", "tool-failure")]
    assert sliced["verdict"] == "regression" and sliced["cases"] == 5
    assert sliced["difference"]["high"] < 0  # the interval excludes zero
    assert (sliced["baseline"], sliced["candidate"]) == (1.0, 0.0)
    assert rules[("rate:tool_error_recovery", None)]["verdict"] == "regression"
    assert rules[("critical_failures", None)]["verdict"] == "pass"
    # The reworded conversations are not failures: only the five tool-failure cases changed.
    new = report["changed"]["new"]
    assert [item["slices"] for item in new] == [["tool-failure"]] * 5
    assert report["changed"]["fixed"] == report["changed"]["still_failing"] == []
    assert report["candidate"]["pass_hat_k"] == {"1": 7 / 12, "2": 7 / 12}
    text = markdown.read_text()
    assert "| joint_success [tool-failure] | REGRESSION | 5 |" in text
    assert "- new: rc-" in text and "[tool-failure]" in text


def test_identical_versions_are_inconclusive_on_a_small_sample_and_pass_on_a_large_one(
    tmp_path, capsys
):
    few = cases(addresses=2, refunds=1, statuses=2)
    code, out = gate(
        capsys,
        replay(tmp_path, "v1", few, name="small-a"),
        replay(tmp_path, "v1", few, name="small-b"),
        "--json",
    )
    report = json.loads(out)
    assert code == 2, out
    [global_rule] = [r for r in report["rules"] if r["rule"] == "joint_success" and not r["slice"]]
    # Two identical releases: no observed difference, but five cases cannot show a 5-point drop.
    assert global_rule["verdict"] == "inconclusive" and global_rule["difference"]["estimate"] == 0
    assert global_rule["needed"] == 150
    assert "150 needed" in global_rule["reason"]

    policy = tmp_path / "policy.yaml"
    policy.write_text(
        "joint_success:\n  min_detectable_drop: 0.2\n  slice_min_detectable_drop: 0.3\n"
    )
    many = cases(addresses=19, refunds=0, statuses=19, start=100)
    code, out = gate(
        capsys,
        replay(tmp_path, "v1", many, name="large-a"),
        replay(tmp_path, "v1", many, name="large-b"),
        "--policy",
        str(policy),
    )
    assert code == 0, out
    assert out.startswith("gate: PASS (exit 0)")
    assert "joint_success [tool-failure]  PASS" in out


def test_pass_hat_k_over_repeated_runs_of_a_flaky_release(tmp_path, capsys):
    replayed = cases(addresses=1, refunds=0, statuses=2)
    path = replay(tmp_path, "flaky", replayed, repeat=3)
    out = capsys.readouterr().out
    runs = load_replay(path)
    assert runs.repeat == 3 and len(runs.runs) == 9
    passes = {case: sum(run.passed for run in group) for case, group in runs.cases().items()}
    # Every second status conversation makes the regression: pass^1 > pass^2 > pass^3.
    assert sorted(passes.values()) != [3, 3, 3]
    line = next(line for line in out.splitlines() if line.startswith("3 case(s) x 3:"))
    first, second, third = (float(part.split()[-1]) for part in line.split(": ")[1].split(", "))
    assert first > second > third


def test_unpaired_files_are_compared_session_by_session(tmp_path, capsys):
    before = replay(tmp_path, "v1", cases(addresses=2, refunds=0, statuses=2), name="a")
    after = replay(tmp_path, "v2", cases(addresses=2, refunds=0, statuses=2, start=50), name="b")
    code, out = gate(capsys, before, after, "--json")
    report = json.loads(out)
    assert report["paired"] is False and report["changed"]["new"] == []
    [rule] = [r for r in report["rules"] if r["rule"] == "joint_success" and not r["slice"]]
    assert rule["difference"]["estimate"] == -0.5 and rule["cases"] == 4
    assert code in (1, 2)


def test_bad_input_exits_3_with_a_clear_message(tmp_path, capsys):
    good = replay(tmp_path, "v1", cases(addresses=1, refunds=0, statuses=0))
    broken = tmp_path / "broken.json"
    broken.write_text('{"replay_format": 1, "runs": []}')
    assert main(["gate", "--baseline", str(good), "--candidate", str(broken)]) == 3
    assert "not a replay result file: target: Field required" in capsys.readouterr().err
    assert main(["gate", "--baseline", str(good), "--candidate", str(tmp_path / "none")]) == 3
    assert "cannot read" in capsys.readouterr().err
    policy = tmp_path / "policy.yaml"
    policy.write_text("joint_success:\n  min_detectable_drop: 2\n")
    code = main(
        ["gate", "--baseline", str(good), "--candidate", str(good), "--policy", str(policy)]
    )
    assert code == 3
    assert "joint_success.min_detectable_drop" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exited:
        main(["gate", "--baseline", str(good)])
    assert exited.value.code == 3


def test_bootstrap_interval_and_sample_size():
    drops = [-1.0] * 10 + [0.0] * 90
    interval = bootstrap(drops, lambda xs: sum(xs) / len(xs), 2000, 0.95, seed=1)
    assert interval.estimate == -0.1
    assert -0.17 < interval.low < -0.12 and -0.07 < interval.high < -0.04
    # The same seed gives the same interval.
    assert bootstrap(drops, lambda xs: sum(xs) / len(xs), 2000, 0.95, seed=1) == interval
    # No observed difference still needs the cases a 5-point drop of whole cases would take.
    assert power([0.0] * 10, 0.05, 0.95, 0.8).needed == 150
    assert power(drops, 0.05, 0.95, 0.8).needed == 283  # variance 0.09 > 0.05 * 0.95


def from_store(data_dir: Path, baseline: str, candidate: str, *options: str) -> int:
    return main(
        [
            *("gate", "--data-dir", str(data_dir), "--baseline", baseline),
            *("--candidate", candidate, *options),
        ]
    )


def test_production_sessions_from_the_session_store_are_compared_unpaired(tmp_path, capsys):
    store = SessionStore(SqliteDatabase(tmp_path / "sessions.db"))
    for number in range(20):
        good = healthy(f"good-{number}", minutes=number)
        store.put_session(good)
        store.put_score(scored(good))
        bad = failing(f"bad-{number}", minutes=number)
        bad.provenance.service_version = "1.6.0"
        store.put_session(bad)
        store.put_score(scored(bad))
    # A later revision of a session counts once, at its latest revision.
    again = healthy("good-0", minutes=30)
    again.revision = 2
    store.put_session(again)
    store.put_score(scored(again))
    code = from_store(tmp_path, "store:version=1.5.0", "store:version=1.6.0", "--json")
    report = json.loads(capsys.readouterr().out)
    assert code == 1
    assert report["paired"] is False
    assert (report["baseline"]["release"], report["baseline"]["cases"]) == ("1.5.0", 20)
    assert (report["candidate"]["release"], report["candidate"]["cases"]) == ("1.6.0", 20)
    rules = {rule["rule"]: rule for rule in report["rules"] if not rule["slice"]}
    assert rules["critical_failures"]["verdict"] == "regression"
    assert rules["critical_failures"]["candidate"] >= 20

    window = "store:version=1.5.0,until=2026-11-01T12:09:59"
    code = from_store(tmp_path, window, "store:version=1.5.0", "--json")
    assert json.loads(capsys.readouterr().out)["baseline"]["cases"] == 10
    assert code in (0, 2)

    for selection, message in (
        ("store:colour=red", "unknown filter 'colour'"),
        ("store:version", "is not key=value"),
        ("store:since=yesterday", "since:"),
    ):
        assert from_store(tmp_path, selection, "store:version=1.6.0") == 3
        assert message in capsys.readouterr().err
    empty = tmp_path / "empty"
    empty.mkdir()
    code = from_store(empty, "store:version=1", "store:version=2")
    assert code == 3 and "no session store" in capsys.readouterr().err


def test_store_selections_by_resource_attribute_pick_exactly_their_sessions(tmp_path, capsys):
    store = SessionStore(SqliteDatabase(tmp_path / "sessions.db"))
    environments = {"staging": 6, "production": 9, "canary": 4}
    for environment, count in environments.items():
        for number in range(count):
            good = healthy(f"{environment}-{number}", minutes=number)
            good.provenance.resource_attributes = {"deployment.environment": environment}
            store.put_session(good)
            store.put_score(scored(good))
    unlabelled = healthy("unlabelled")
    store.put_session(unlabelled)
    store.put_score(scored(unlabelled))

    def sides(baseline: str, candidate: str) -> tuple[int, dict]:
        code = from_store(tmp_path, baseline, candidate, "--json")
        return code, json.loads(capsys.readouterr().out)

    code, report = sides(
        "store:deployment.environment=staging",
        "store:service=support-bot,deployment.environment=production",
    )
    assert code != 3
    assert report["baseline"]["cases"] == 6 and report["candidate"]["cases"] == 9
    assert report["candidate"]["release"] == "deployment.environment=production"
    _, report = sides(
        "store:deployment.environment=canary,service.version=1.5.0",
        "store:deployment.environment=production,until=2026-11-01T12:04:59",
    )
    assert report["baseline"]["cases"] == 4 and report["candidate"]["cases"] == 5
    assert report["baseline"]["release"] == "1.5.0"  # the version names a side when given
    _, report = sides("store:service.name=support-bot", "store:deployment.environment=nowhere")
    assert report["baseline"]["cases"] == 20 and report["candidate"]["cases"] == 0

    for selection, message in (
        ("store:deployment.enviroment=staging", "no stored session carries the resource "
         "attribute 'deployment.enviroment' (stored: deployment.environment;"),
        ("store:environment=staging", "unknown filter 'environment'"),
        ("store:deployment.environment=", "'deployment.environment' has no value"),
        ("store:deployment.environment", "is not key=value"),
        ("store:=staging", "'=staging' is not key=value"),
        ("store:deployment.environment=a,deployment.environment=b", "is given twice"),
        ("store:version=1.5.0,service.version=1.6.0", "'service.version' is given twice"),
        ("store:deployment..environment=staging", "is not a resource attribute key"),
        ("store:attributes=x", "unknown filter 'attributes'"),
    ):  # fmt: skip
        assert from_store(tmp_path, selection, "store:deployment.environment=staging") == 3
        error = capsys.readouterr().err
        assert message in error, error


def test_a_critical_failure_counts_even_in_a_case_only_the_candidate_ran(tmp_path, capsys):
    replayed = cases(addresses=2, refunds=0, statuses=0)
    before = replay(tmp_path, "v1", replayed, name="before")
    after = replay(tmp_path, "v1", replayed, name="after")
    candidate = load_replay(after)
    extra = candidate.runs[0].model_copy(update={"case_id": "rc-only-here", "critical": ["x"]})
    candidate.runs.append(extra)
    candidate.save(after)
    code, out = gate(capsys, before, after, "--json")
    report = json.loads(out)
    assert code == 1 and report["unpaired_cases"] == ["rc-only-here"]
    [critical] = [rule for rule in report["rules"] if rule["rule"] == "critical_failures"]
    assert (critical["verdict"], critical["candidate"]) == ("regression", 1)
