"""A real Prometheus server (Debian package) scrapes a running `turnwatch serve` on loopback,
loads turnwatch's rule files, and answers queries for the series turnwatch exports."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import yaml
from turnwatch.exporters.config import ExporterConfig
from turnwatch.exporters.score_exporter import ScoreExporter

from tests.conftest import Running, make_settings, start_service
from tests.kafka_broker import free_port
from tests.otlp_requests import LOOPBACK
from tests.test_exporter import score_record
from tests.test_prometheus_rules import RULE_FILES
from tests.test_prometheus_rules import rules as rule_definitions
from tests.waiting import eventually

pytestmark = pytest.mark.slow  # a Prometheus server


@pytest.fixture
def turnwatch() -> Iterator[Running]:
    handle = start_service(make_settings(**{"otlp.grpc_enabled": False}))
    yield handle
    handle.background.stop()


@pytest.fixture
def prometheus(tmp_path: Path, turnwatch: Running) -> Iterator[str]:
    binary = shutil.which("prometheus")
    assert binary, "prometheus missing: apt-get install -y prometheus (Debian package)"
    config = {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(path) for path in RULE_FILES],
        "scrape_configs": [
            {
                "job_name": "turnwatch",
                "static_configs": [{"targets": [f"127.0.0.1:{turnwatch.service.ports.ops}"]}],
            }
        ],
    }
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(config))
    port = free_port()
    process = subprocess.Popen(
        [
            binary,
            f"--config.file={tmp_path / 'prometheus.yml'}",
            f"--storage.tsdb.path={tmp_path / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=(tmp_path / "prometheus.log").open("w"),
    )
    url = f"http://127.0.0.1:{port}"
    try:
        eventually(
            lambda: LOOPBACK.get(f"{url}/-/ready", timeout=2).status_code,
            lambda status: status == 200,
            timeout=30,
            interval=0.25,
            what="Prometheus to be ready",
            ignoring=httpx.TransportError,
        )
        yield url
    finally:
        process.terminate()
        process.wait(timeout=20)


def query(url: str, expression: str) -> list[dict]:
    answer = LOOPBACK.get(f"{url}/api/v1/query", params={"query": expression}, timeout=5).json()
    assert answer["status"] == "success", answer
    return answer["data"]["result"]


def test_prometheus_scrapes_turnwatch_and_loads_its_rules(turnwatch: Running, prometheus: str):
    exporter = ScoreExporter(turnwatch.service.registry, ExporterConfig(services=["support-bot"]))
    for number in range(5):
        record = score_record(f"s-{number}", scores={"relevancy": 0.7}, critical="forbidden")
        exporter.observe(record)
    eventually(
        lambda: query(prometheus, 'turnwatch_sessions_scored_total{job="turnwatch"}'),
        timeout=30,
        interval=0.25,
        what="the first scrape with scores",
    )

    assert query(prometheus, 'up{job="turnwatch"}')[0]["value"][1] == "1"
    scored = query(prometheus, "turnwatch_sessions_scored_total")[0]
    assert scored["metric"]["service"] == "support-bot" and scored["value"][1] == "5"
    mean = query(
        prometheus, "sum(turnwatch_session_score_sum) / sum(turnwatch_session_score_count)"
    )
    assert float(mean[0]["value"][1]) == pytest.approx(0.7)
    critical = query(prometheus, 'turnwatch_critical_failures_total{check="forbidden"}')
    assert critical[0]["value"][1] == "5"
    # The collector's own series come from the same scrape.
    assert query(prometheus, "turnwatch_sessions_opened_total")

    names = LOOPBACK.get(f"{prometheus}/api/v1/label/__name__/values", timeout=5).json()["data"]
    turnwatch_names = {name for name in names if name.startswith("turnwatch_")}
    assert {"turnwatch_session_score_bucket", "turnwatch_joint_success_total"} <= turnwatch_names

    # Every rule group loaded and evaluates without error against real series.
    def rules() -> list[dict]:
        groups = LOOPBACK.get(f"{prometheus}/api/v1/rules", timeout=5).json()["data"]["groups"]
        return [rule for group in groups for rule in group["rules"]]

    expected = len(rule_definitions())

    def healthy(loaded: list[dict]) -> bool:
        return len(loaded) == expected and all(
            rule["health"] == "ok" and rule.get("lastEvaluation", "").startswith("2")
            for rule in loaded
        )

    eventually(
        rules, healthy, timeout=30, interval=0.25, what=f"{expected} rules evaluated healthy"
    )
    # Recording rules ran: the rate needs two scrapes, and the series exists once they have.
    [ratio] = eventually(
        lambda: query(prometheus, "service:turnwatch_critical_failure_sessions:ratio_rate15m"),
        timeout=30,
        interval=0.25,
        what="the recording rule's first series",
    )
    assert ratio["metric"]["service"] == "support-bot"
