"""Prometheus rules in deploy/prometheus: valid, unit-tested with promtool, naming real series.

promtool comes from Debian's `prometheus` package (`.ci/run` installs it); these tests fail
rather than skip without it, so a CI image that lost it cannot pass silently.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.metric_catalogue import full_registry

ROOT = Path(__file__).resolve().parent.parent
PROMETHEUS = ROOT / "deploy" / "prometheus"
RULE_FILES = sorted((PROMETHEUS / "rules").glob("*.yml"))
TEST_FILES = sorted((PROMETHEUS / "tests").glob("*.test.yml"))
METRIC_NAME = re.compile(r"\b(turnwatch_[a-z0-9_]+)\b")
SUFFIXES = ("_bucket", "_count", "_sum", "_total", "_created")
BUILTIN = {"up"}


def promtool() -> str:
    path = shutil.which("promtool")
    assert path, "promtool missing: apt-get install -y prometheus (Debian package)"
    return path


def exported_series() -> set[str]:
    """Every series name turnwatch can put on /metrics, histogram and counter suffixes included."""
    names: set[str] = set()
    for family in full_registry().collect():
        names.add(family.name)
        names.update(f"{family.name}{suffix}" for suffix in SUFFIXES)
    return names


def named_series(expression: str) -> set[str]:
    """turnwatch series an expression reads (recording-rule names contain ':', so never match)."""
    return {
        match.group(1)
        for match in METRIC_NAME.finditer(expression)
        if expression[max(match.start() - 1, 0)] != ":"
    }


def rules() -> list[dict]:
    return [
        rule
        for path in RULE_FILES
        for group in yaml.safe_load(path.read_text())["groups"]
        for rule in group["rules"]
    ]


@pytest.mark.slow  # promtool
def test_rule_files_pass_promtool_check():
    result = subprocess.run(
        [promtool(), "check", "rules", *map(str, RULE_FILES)], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.slow  # promtool
def test_promtool_unit_tests_pass():
    result = subprocess.run(
        [promtool(), "test", "rules", *map(str, TEST_FILES)],
        capture_output=True,
        text=True,
        cwd=PROMETHEUS,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_alert_has_a_firing_and_a_silent_case():
    firing: set[str] = set()
    silent: set[str] = set()
    for path in TEST_FILES:
        for case in yaml.safe_load(path.read_text())["tests"]:
            for check in case.get("alert_rule_test", []):
                (firing if check.get("exp_alerts") else silent).add(check["alertname"])
    alerts = {rule["alert"] for rule in rules() if "alert" in rule}
    assert alerts, "no alert rules found"
    assert alerts <= firing, alerts - firing
    assert alerts <= silent, alerts - silent


def test_rules_read_only_series_turnwatch_exports():
    exported = exported_series()
    recorded = {rule["record"] for rule in rules() if "record" in rule}
    for rule in rules():
        unknown = named_series(rule["expr"]) - exported
        assert not unknown, (rule.get("alert") or rule.get("record"), unknown)
        # Recording-rule names used by alerts must be defined here, not somewhere else.
        for name in re.findall(r"\b[a-z_]+:[a-z0-9_:]+\b", rule["expr"]):
            assert name in recorded, name


def test_alerts_carry_severity_and_summary():
    for rule in rules():
        if "alert" in rule:
            assert rule["labels"]["severity"] in {"page", "ticket"}, rule["alert"]
            assert rule["annotations"]["summary"], rule["alert"]
            assert rule["alert"].startswith("Turnwatch"), rule["alert"]
