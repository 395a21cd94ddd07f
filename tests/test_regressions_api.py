"""The incidents API served over real HTTP: a separate process runs the ops app with the
incidents router under uvicorn on a loopback port; the test pages through it with httpx."""

from __future__ import annotations

import base64
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from turnwatch.exporters.regressions.config import RegressionConfig
from turnwatch.scorers.flagging import Flagger

from tests.test_regressions_cases import incident, refund_over_limit, store_at
from tests.test_scorers_builders import bot, call, session, user
from tests.waiting import eventually
from turnwatch.schema import SamplingDecision, SamplingReason

pytestmark = pytest.mark.slow  # the ops app served by a subprocess

ROOT = Path(__file__).resolve().parent.parent
TOKEN = "s3cret-token"

SERVER = """
import socket, sys
from pathlib import Path
import uvicorn
from prometheus_client import CollectorRegistry
from turnwatch.exporters.ops import create_ops_app
from turnwatch.exporters.regressions.api import include_incidents_api
from turnwatch.exporters.regressions.store import CaseStore

store = CaseStore(Path(sys.argv[1]))
app = create_ops_app(CollectorRegistry(), {})
include_incidents_api(app, store, sys.argv[2])
sock = socket.socket()
sock.bind(("127.0.0.1", 0))
print(sock.getsockname()[1], flush=True)
uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])
"""


def forced_error(built):
    built.sampling = SamplingDecision(
        sampled=True, reason=SamplingReason.FORCED_ERROR, rate=0.1, hash_fraction=0.5
    )
    return built


@pytest.fixture
def api(tmp_path):
    store, _ = store_at(tmp_path)
    flag = Flagger(RegressionConfig())
    base = datetime(2025, 3, 1, tzinfo=UTC)
    # Five distinct failures (five cases), one hour apart, plus a recurrence of the first.
    failing = [
        refund_over_limit("r-1"),
        session(user("x"), bot(None, call("delete_account_data")), session_id="d-1"),
        session(user("x"), bot(None, call("launch_rocket")), session_id="u-1"),
        session(user("x"), bot(None, call("lookup_order", {})), session_id="a-1"),
        forced_error(session(user("x"), bot("Sorry."), session_id="o-1", service="other-bot")),
    ]
    for hour, built in enumerate(failing):
        outcome = store.record(incident(flag, built), base + timedelta(hours=hour))
        assert outcome == "new_case"
    store.record(incident(flag, refund_over_limit("r-2")), base + timedelta(hours=9))
    process = subprocess.Popen(
        [sys.executable, "-c", SERVER, str(store.directory), TOKEN],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        port = int(process.stdout.readline())
        url = f"http://127.0.0.1:{port}"
        with httpx.Client(base_url=url, timeout=10) as client:
            eventually(
                lambda: client.get("/healthz").status_code,
                lambda status: status == 200,
                what="the incidents API to answer",
                ignoring=httpx.TransportError,
            )
            yield client, store
    finally:
        process.terminate()
        process.wait(timeout=10)


def auth(token: str = TOKEN) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_auth_is_enforced(api):
    client, _ = api
    assert client.get("/api/incidents").status_code == 401
    wrong = client.get("/api/incidents", headers=auth("s3cret-tokeX"))
    assert wrong.status_code == 401 and wrong.headers["www-authenticate"] == "Bearer"
    assert TOKEN not in wrong.text
    assert client.get("/api/incidents", headers={"Authorization": TOKEN}).status_code == 401
    assert client.get("/api/incidents/rc-0000000000000000").status_code == 401
    assert client.get("/api/incidents", headers=auth()).status_code == 200
    assert client.get("/healthz").status_code == 200  # the rest of the ops port stays open


def test_pages_filters_and_detail(api):
    client, store = api
    seen, cursor = [], None
    while True:
        params = {"limit": 2} | ({"cursor": cursor} if cursor else {})
        page = client.get("/api/incidents", params=params, headers=auth()).json()
        assert page["total"] == 5 and len(page["items"]) <= 2
        seen += page["items"]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert len(seen) == 5 and len({item["id"] for item in seen}) == 5
    # Newest first; the recurring refund case was seen last.
    assert seen[0]["check"] == "approval+forbidden_action" and seen[0]["occurrence_count"] == 2
    assert [item["last_seen"] for item in seen] == sorted(
        (item["last_seen"] for item in seen), reverse=True
    )

    def ids(**params: str) -> set[str]:
        items = client.get("/api/incidents", params=params, headers=auth()).json()["items"]
        return {item["check"] for item in items}

    assert ids(service="other-bot") == {"sampling:forced_error"}
    assert ids(check="forbidden_action") == {"approval+forbidden_action", "forbidden_action"}
    assert ids(since="2025-03-01T02:30:00+00:00", until="2025-03-01T05:00:00+00:00") == {
        "argument_validity",
        "sampling:forced_error",
    }
    assert ids(slice="handoff") == set()
    bad = client.get("/api/incidents", params={"cursor": "%%%"}, headers=auth())
    assert bad.status_code == 400
    assert client.get("/api/incidents", params={"limit": 0}, headers=auth()).status_code == 422

    detail = client.get(f"/api/incidents/{seen[0]['id']}", headers=auth())
    assert detail.status_code == 200
    assert detail.json() == store.get(seen[0]["id"]).to_json()
    for missing in ("rc-0000000000000000", "..%2F..%2Fetc%2Fpasswd", "rc-zz"):
        assert client.get(f"/api/incidents/{missing}", headers=auth()).status_code == 404


def _cursor(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


@pytest.mark.parametrize(
    "cursor",
    [
        _cursor(b"[" * 5000 + b"]" * 5000),  # answered 500 (RecursionError) before
        _cursor(b"[" * 60 + b"]" * 60),  # short enough to pass the length check: still no list
        _cursor(b'{"last_seen": 1}'),
        _cursor(b"[1, 2]"),
        _cursor(b'["2025-03-01T00:00:00+00:00"]'),
        _cursor(b'["2025-03-01T00:00:00", "rc-0123456789abcdef"]'),  # no offset
        _cursor(b'["yesterday", "rc-0123456789abcdef"]'),
        _cursor(b'["2025-03-01T00:00:00+00:00", "../../etc/passwd"]'),
        _cursor(b'["2025-03-01T00:00:00+00:00", "rc-0123456789abcdef", 3]'),
        "x" * 500,
    ],
    ids=[
        "nested-5000",
        "nested-60",
        "object",
        "numbers",
        "one-part",
        "no-offset",
        "not-a-time",
        "path-as-id",
        "three-parts",
        "too-long",
    ],
)
def test_a_hostile_cursor_is_400_with_a_message(api, cursor):
    client, _ = api
    answer = client.get("/api/incidents", params={"cursor": cursor}, headers=auth())
    assert answer.status_code == 400
    assert answer.json() == {"detail": "invalid cursor"}
    assert client.get("/api/incidents", headers=auth()).status_code == 200
