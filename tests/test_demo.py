"""`turnwatch demo` end to end, as a newcomer runs it: one subprocess, every failure slice caught.

The subprocess runs with a `sitecustomize` that refuses every non-loopback connection, so the demo
also proves it needs no network (no model download, no judge endpoint, no API key).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from turnwatch.app.demo.scripts import SCRIPTS

pytestmark = pytest.mark.slow  # `turnwatch demo` in a subprocess, about a minute

ROOT = Path(__file__).resolve().parent.parent
DEMO_SECONDS = 90

BLOCK_OUTBOUND = textwrap.dedent(
    """
    import socket

    _connect = socket.socket.connect


    def _loopback_only(self, address):
        if self.family in (socket.AF_INET, socket.AF_INET6):
            host = address[0]
            if host not in ("127.0.0.1", "::1", "localhost"):
                raise OSError(f"outbound connection to {host} blocked by test_demo")
        return _connect(self, address)


    socket.socket.connect = _loopback_only
    """
)

RAW_PATTERNS = (
    r"[\w.]+@example\.(?:com|net)",
    r"ORD#\d+",
    r"\d+ [A-Z][a-z]+ (?:Street|Avenue)",
    r"Alice Martin",
)

EXPECTED = {
    "recollection": {"knowledge_attrition"},
    "revision": {"contradictions"},
    "tool-failure": {"tool_error_recovery"},
    "forbidden-action": {"forbidden_action"},
    "missing-approval": {"approval"},
    "cross-user-disclosure": {"cross_user_disclosure"},
    "long-horizon": {"knowledge_attrition", "turn_budget"},
    "unanswerable": {"outcome"},
}
CRITICAL = {
    "forbidden-action": "forbidden_action",
    "missing-approval": "approval",
    "cross-user-disclosure": "cross_user_disclosure",
}
TAGGED = {
    "revision": "revision",
    "tool-failure": "tool-failure",
    "long-horizon": "long-horizon",
    "unanswerable": "unanswerable",
}


@dataclass
class Row:
    scenario: str
    slice: str
    joint: str
    critical: set[str]
    checks: set[str]
    tagged: set[str]
    incident: bool
    result: str
    session: str


@dataclass
class DemoRun:
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    data_dir: Path

    def rows(self) -> dict[str, Row]:
        names = {script.name for script in SCRIPTS}
        rows = {}
        for line in self.stdout.splitlines():
            cells = re.split(r"\s{2,}", line.strip())
            if cells[0] in names and len(cells) == 9:
                sets = [set() if cell == "-" else set(cell.split(",")) for cell in cells[3:6]]
                incident = cells[6] == "yes"
                rows[cells[0]] = Row(
                    cells[0], cells[1], cells[2], *sets, incident, cells[7], cells[8]
                )
        return rows


def _raw_values() -> set[str]:
    """Every value in the scripts that looks personal: none may leave de-identification."""
    texts = [
        part
        for script in SCRIPTS
        for exchange in script.exchanges
        for part in (
            exchange.user,
            exchange.answer,
            json.dumps([s.arguments for s in exchange.tools]),
        )
    ]
    found = {
        match for pattern in RAW_PATTERNS for text in texts for match in re.findall(pattern, text)
    }
    return found | {script.user_id for script in SCRIPTS}


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> DemoRun:
    base = tmp_path_factory.mktemp("demo")
    site = base / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(BLOCK_OUTBOUND)
    data_dir = base / "data"
    env = {key: value for key, value in os.environ.items() if not key.startswith("TURNWATCH_")}
    env["PYTHONPATH"] = os.pathsep.join([str(site), str(ROOT)])
    command = [sys.executable, "-m", "turnwatch", "demo", "--otlp-port", "0", "--grpc-port", "0"]
    command += ["--ops-port", "0", "--data-dir", str(data_dir)]
    started = time.monotonic()
    done = subprocess.run(
        command,
        cwd=base,
        env=env,
        capture_output=True,
        text=True,
        timeout=DEMO_SECONDS + 60,
    )
    return DemoRun(done.returncode, done.stdout, done.stderr, time.monotonic() - started, data_dir)


def test_demo_finishes_by_itself_and_scores_every_conversation(demo):
    assert demo.returncode == 0, demo.stderr[-3000:]
    assert demo.seconds < DEMO_SECONDS
    assert f"{len(SCRIPTS)} conversations sent, {len(SCRIPTS)} sessions scored" in demo.stdout
    assert "sent 1/" in demo.stderr  # progress while it runs
    assert "HEURISTIC built-in judge" in demo.stdout
    # Scored where the heuristic carries signal; unscored (no mean) where it needs an endpoint.
    assert re.search(r"^role_adherence\s+\d\.\d\d\s+\d+", demo.stdout, re.MULTILINE)
    assert re.search(r"^turn_relevancy\s+-\s+0\s+\d+", demo.stdout, re.MULTILINE)
    assert f"regressions --data-dir {demo.data_dir} list" in demo.stdout
    assert "/metrics" in demo.stdout


def test_every_failure_slice_is_caught_by_its_check(demo):
    rows = demo.rows()
    assert set(rows) == {script.name for script in SCRIPTS}
    for scenario, checks in EXPECTED.items():
        row = rows[scenario]
        assert checks <= row.checks, (scenario, row)
        assert row.result == "as expected", (scenario, row)
    for scenario, check in CRITICAL.items():
        assert rows[scenario].critical == {check}, rows[scenario]
        assert rows[scenario].joint == "FAIL"
        assert rows[scenario].incident
    for scenario, tag in TAGGED.items():
        assert tag in rows[scenario].tagged, rows[scenario]
    assert "failure slices 8/8 caught" in demo.stdout


def test_the_summary_names_each_session_and_where_to_open_it(demo):
    rows = demo.rows()
    assert all(re.fullmatch(r"[0-9a-f]{32}", row.session) for row in rows.values())
    first_failed = re.search(r"failed session +http://\S+/ui/sessions/([0-9a-f]{32})", demo.stdout)
    first_failed = first_failed.group(1)
    assert {row.joint for row in rows.values() if row.session == first_failed} == {"FAIL"}
    assert f"turnwatch sessions --data-dir {demo.data_dir} show <session>" in demo.stdout
    code = subprocess.run(
        [sys.executable, "-m", "turnwatch", "sessions", "--data-dir", str(demo.data_dir),
         "show", first_failed], capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert code.returncode == 0 and "!! CRITICAL" in code.stdout


def test_keep_serving_opens_onto_the_web_view_two_clicks_from_a_failed_finding(tmp_path):
    import httpx

    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(BLOCK_OUTBOUND)
    env = {key: value for key, value in os.environ.items() if not key.startswith("TURNWATCH_")}
    env["PYTHONPATH"] = os.pathsep.join([str(site), str(ROOT)])
    command = [sys.executable, "-m", "turnwatch", "demo", "--keep-serving", "--otlp-port", "0"]
    command += ["--grpc-port", "0", "--ops-port", "0", "--data-dir", str(tmp_path / "data")]
    stderr = (tmp_path / "stderr").open("w+")
    process = subprocess.Popen(command, env=env, cwd=tmp_path, stdout=subprocess.DEVNULL,
                               stderr=stderr, text=True)  # fmt: skip
    try:
        deadline = time.monotonic() + DEMO_SECONDS + 60
        found = None
        while found is None and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.5)
            found = re.search(r"Open the web view: (http://\S+/ui/)", Path(stderr.name).read_text())
        assert found, Path(stderr.name).read_text()[-3000:]
        client = httpx.Client(timeout=30)
        landing = client.get(found.group(1))  # click 1: the address the demo printed
        assert landing.status_code == 200
        failed = re.search(r'Latest failed sessions.*?href="(/ui/sessions/[0-9a-f]{32}[^"]*)"',
                           landing.text, re.DOTALL)  # fmt: skip
        page = client.get(
            found.group(1).removesuffix("/ui/") + failed.group(1).replace("&amp;", "&")
        )
        assert page.status_code == 200  # click 2: the first failed session
        assert 'class="finding' in page.text and "first broken transition:" in page.text
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=60)
        stderr.close()


def test_healthy_conversations_have_no_critical_failure(demo):
    healthy = [row for row in demo.rows().values() if row.slice == "healthy"]
    assert len(healthy) >= 4
    for row in healthy:
        assert row.critical == set(), row
        assert row.joint != "FAIL", row
        assert not row.incident, row
        assert row.result == "as expected", row


def test_incidents_become_deidentified_regression_case_files(demo):
    files = sorted((demo.data_dir / "regressions").glob("rc-*.json"))
    checks = {json.loads(file.read_text())["signature"]["check"] for file in files}
    assert set(CRITICAL.values()) <= checks
    assert re.search(rf"-> {len(files)} regression cases \({len(files)} new", demo.stdout)
    written = "\n".join(file.read_text() for file in files)
    assert "<EMAIL_ADDRESS_" in written and "<ORDER_NUMBER_" in written
    leaked = {
        raw
        for raw in _raw_values()
        for where in (written, demo.stdout, demo.stderr)
        if raw in where
    }
    assert not leaked
    assert not re.search(r"demo-[0-9a-f]{8}-", written + demo.stdout + demo.stderr)
