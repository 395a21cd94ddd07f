"""Grafana provisioning in deploy/grafana: loads, names only series turnwatch exports, and every
PromQL expression (dashboard panels and alert queries) passes promtool's parser."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.test_prometheus_rules import exported_series, named_series, promtool, rules

ROOT = Path(__file__).resolve().parent.parent
GRAFANA = ROOT / "deploy" / "grafana"
DASHBOARD = json.loads((GRAFANA / "dashboards" / "turnwatch.json").read_text())
PROVISIONING = GRAFANA / "provisioning"
DATASOURCE_UID = "turnwatch-prometheus"
# Grafana fills these in before sending a query; promtool needs concrete values.
GRAFANA_VARIABLES = {"$__rate_interval": "5m", "$__interval": "1m", "$__range": "1h"}


def load(path: Path) -> dict:
    return yaml.safe_load(path.read_text())


def panel_targets() -> list[tuple[str, dict]]:
    return [
        (panel["title"], target)
        for panel in DASHBOARD["panels"]
        if panel["type"] != "row"
        for target in panel["targets"]
    ]


def alert_queries() -> list[tuple[str, dict]]:
    document = load(PROVISIONING / "alerting" / "turnwatch-drift.yml")
    return [
        (rule["title"], query)
        for group in document["groups"]
        for rule in group["rules"]
        for query in rule["data"]
    ]


def expressions() -> list[tuple[str, str]]:
    found = [(title, target["expr"]) for title, target in panel_targets()]
    found += [
        (t, q["model"]["expr"]) for t, q in alert_queries() if q["datasourceUid"] != "__expr__"
    ]
    return found


def concrete(expression: str) -> str:
    for variable, value in GRAFANA_VARIABLES.items():
        expression = expression.replace(variable, value)
    return expression


def test_provisioning_files_have_grafana_structure():
    datasources = load(PROVISIONING / "datasources" / "turnwatch.yml")
    assert datasources["apiVersion"] == 1
    [source] = datasources["datasources"]
    assert (source["uid"], source["type"], source["access"]) == (
        DATASOURCE_UID,
        "prometheus",
        "proxy",
    )
    providers = load(PROVISIONING / "dashboards" / "turnwatch.yml")
    assert providers["apiVersion"] == 1
    assert providers["providers"][0]["type"] == "file"
    assert providers["providers"][0]["options"]["path"]
    alerting = load(PROVISIONING / "alerting" / "turnwatch-drift.yml")
    assert alerting["apiVersion"] == 1
    for group in alerting["groups"]:
        assert {"orgId", "name", "folder", "interval", "rules"} <= group.keys()
        for rule in group["rules"]:
            assert {"uid", "title", "condition", "data", "for", "noDataState"} <= rule.keys()
            refs = {query["refId"] for query in rule["data"]}
            assert rule["condition"] in refs
            for query in rule["data"]:
                if query["datasourceUid"] == "__expr__":
                    assert query["model"]["expression"] in refs
                else:
                    assert query["datasourceUid"] == DATASOURCE_UID


def test_dashboard_structure_and_datasource():
    assert DASHBOARD["uid"] and DASHBOARD["title"] and DASHBOARD["schemaVersion"] >= 36
    ids = [panel["id"] for panel in DASHBOARD["panels"]]
    assert len(ids) == len(set(ids))
    for panel in DASHBOARD["panels"]:
        if panel["type"] == "row":
            continue
        assert panel["datasource"]["uid"] == DATASOURCE_UID, panel["title"]
        assert panel["targets"], panel["title"]
        grid = panel["gridPos"]
        assert grid["x"] + grid["w"] <= 24, panel["title"]
    variables = {var["name"]: var for var in DASHBOARD["templating"]["list"]}
    assert {"service", "metric"} <= variables.keys()
    for var in variables.values():
        series = re.fullmatch(r"label_values\((\w+), (\w+)\)", var["query"]["query"])
        assert series and series.group(1) in exported_series(), var["query"]


def test_dashboard_covers_scores_drift_failures_success_cost_and_pipeline():
    everything = " ".join(expression for _title, expression in expressions())
    for needed in (
        "turnwatch_session_score_bucket",
        # Drift from the recording rules: right with any number of exporter replicas.
        "service_metric:turnwatch_quality_drift:mean_shift",
        "service_metric:turnwatch_quality_drift:psi",
        "turnwatch_critical_failures_total",
        "turnwatch_joint_success_total",
        "turnwatch_judge_cost_usd_total",
        "turnwatch_spans_rejected_total",
        "turnwatch_bus_consumer_lag_records",
        "turnwatch_deid_duration_seconds_bucket",
        "turnwatch_end_to_end_latency_seconds_bucket",
    ):
        assert needed in everything, needed


def test_every_expression_names_series_turnwatch_exports():
    exported = exported_series()
    recorded = {rule["record"] for rule in rules() if "record" in rule}
    for title, expression in expressions():
        names = named_series(expression)
        used_records = set(re.findall(r"\b[a-z_]+:[a-z0-9_:]+\b", expression))
        assert names or used_records or "up{" in expression, title
        assert names <= exported, (title, names - exported)
        assert used_records <= recorded, (title, used_records - recorded)


@pytest.mark.slow  # promtool
def test_every_expression_passes_promtool(tmp_path: Path):
    generated = {
        "groups": [
            {
                "name": "grafana-expressions",
                "rules": [
                    {"record": f"grafana:expression_{number}", "expr": concrete(expression)}
                    for number, (_title, expression) in enumerate(expressions())
                ],
            }
        ]
    }
    path = tmp_path / "grafana-expressions.yml"
    path.write_text(yaml.safe_dump(generated))
    result = subprocess.run(
        [promtool(), "check", "rules", str(path)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(expressions())} rules found" in result.stdout
