"""Private by default: production mode refuses exposed listeners without tokens, tokens come
from files, and the spool, write-ahead log, quarantine, key and case files are 0600 in 0700
directories."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from turnwatch.collector.deid.config import DeidConfig
from turnwatch.collector.deid.quarantine import QuarantineStore
from turnwatch.collector.deid.secret import load_secret
from turnwatch.collector.wal.segments import Kind, SegmentLog
from turnwatch.exporters.regressions.config import RegressionConfig

from turnwatch.app.exposure import ExposureError, check_collector, check_exporter, is_loopback
from turnwatch.app.settings import ConfigError, Settings, load_settings
from turnwatch.bus.spool import DiskSpool, Item
from turnwatch.private import private_directory
from turnwatch.schema import SamplingDecision, SamplingReason, Session

SECRET = "private-secret-0123456789"


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def assert_private(root: Path) -> None:
    assert mode(root) == 0o700, root
    for path in root.rglob("*"):
        assert mode(path) == (0o700 if path.is_dir() else 0o600), (path, oct(mode(path)))


@pytest.mark.parametrize("host", ["127.0.0.1", "::1", "localhost", "127.0.0.2"])
def test_loopback_hosts(host):
    assert is_loopback(host)


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "10.0.0.5", "turnwatch.internal"])
def test_other_hosts_are_not_loopback(host):
    assert not is_loopback(host)


def test_production_refuses_non_loopback_otlp_without_a_token():
    exposed = Settings(mode="production", otlp={"host": "0.0.0.0"})
    with pytest.raises(ExposureError, match=r"otlp\.auth_token"):
        check_collector(exposed)
    # With a token, on loopback, or in embedded mode it starts.
    check_collector(Settings(mode="production", otlp={"host": "0.0.0.0", "auth_token": "t" * 20}))
    check_collector(Settings(mode="production"))
    check_collector(Settings(otlp={"host": "0.0.0.0"}))


def test_production_refuses_the_incidents_api_without_a_token():
    with pytest.raises(ExposureError, match=r"regressions\.api_token"):
        check_exporter(Settings(mode="production"))
    check_exporter(Settings(mode="production", regressions={"api_token": "t" * 20}))
    check_exporter(Settings())


def test_tokens_are_read_from_files(tmp_path, monkeypatch):
    token = tmp_path / "api-token"
    token.write_text("file-token-0123456789\n")
    monkeypatch.setenv("TURNWATCH_REGRESSIONS__API_TOKEN_FILE", str(token))
    monkeypatch.setenv("TURNWATCH_OTLP__AUTH_TOKEN_FILE", str(token))
    settings = load_settings()
    assert settings.regressions.api_token.get_secret_value() == "file-token-0123456789"
    assert settings.otlp.auth_token.get_secret_value() == "file-token-0123456789"


def test_an_unreadable_or_doubled_token_file_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv("TURNWATCH_REGRESSIONS__API_TOKEN_FILE", str(tmp_path / "missing"))
    with pytest.raises(ConfigError, match=r"api_token_file: cannot read"):
        load_settings()
    empty = tmp_path / "empty"
    empty.write_text("\n")
    monkeypatch.setenv("TURNWATCH_REGRESSIONS__API_TOKEN_FILE", str(empty))
    with pytest.raises(ConfigError, match="is empty"):
        load_settings()
    with pytest.raises(ValueError, match="not both"):
        RegressionConfig(api_token="t" * 20, api_token_file=empty)


@pytest.mark.slow  # a `turnwatch serve` subprocess
def test_serve_in_production_refuses_exposed_otlp_with_a_message(tmp_path):
    env = {
        **os.environ,
        "TURNWATCH_MODE": "production",
        "TURNWATCH_DEID__SECRET": SECRET,
        "TURNWATCH_OTLP__HOST": "0.0.0.0",
        "TURNWATCH_REGRESSIONS__API_TOKEN": "t" * 20,
    }
    command = [sys.executable, "-m", "turnwatch", "serve", "--data-dir", str(tmp_path / "d")]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120, env=env)
    assert result.returncode == 2
    assert "otlp.auth_token" in result.stderr and "Traceback" not in result.stderr


def test_private_directory_creates_and_tightens(tmp_path):
    nested = private_directory(tmp_path / "a" / "b")
    assert mode(tmp_path / "a") == 0o700 and mode(nested) == 0o700
    loose = tmp_path / "loose"
    loose.mkdir(mode=0o755)
    os.chmod(loose, 0o755)
    assert mode(private_directory(loose)) == 0o700


def test_spool_files_are_owner_only(tmp_path):
    old = os.umask(0o022)  # the usual default: the spool must not depend on the process umask
    try:
        spool = DiskSpool(tmp_path / "data" / "spool", max_bytes=1 << 20, segment_bytes=1 << 16)
        spool.append(Item("turnwatch.sessions", "k", b"a transcript"))
        spool.append(Item("turnwatch.sessions", "k", b"another transcript"))
        spool.pop()
        spool.close()
    finally:
        os.umask(old)
    assert {path.name for path in (tmp_path / "data" / "spool").iterdir()} >= {"lock", "cursor"}
    assert_private(tmp_path / "data")


def test_write_ahead_log_files_are_owner_only(tmp_path):
    old = os.umask(0o022)
    try:
        wal = SegmentLog(tmp_path / "data" / "wal", bytes(32), 1 << 16, 1 << 20, sync=False)
        wal.append(Kind.TRACES_PROTOBUF, b"a raw request")
        wal.close()
    finally:
        os.umask(old)
    assert {path.suffix for path in (tmp_path / "data" / "wal").iterdir()} == {"", ".wal"}
    assert_private(tmp_path / "data")


def _session() -> Session:
    from datetime import UTC, datetime

    now = datetime(2026, 1, 1, tzinfo=UTC)
    return Session(
        session_id="s" * 32, revision=1, conversation_key="c", key_source="k", service="svc",
        started_at=now, ended_at=now, close_reason="idle",
        sampling=SamplingDecision(
            sampled=True, reason=SamplingReason.RATE, rate=1.0, hash_fraction=0.1
        ),
    )  # fmt: skip


def test_quarantine_and_key_files_are_owner_only(tmp_path):
    old = os.umask(0o022)
    try:
        load_secret(DeidConfig(), "embedded", tmp_path / "data")
        store = QuarantineStore(tmp_path / "data" / "quarantine", b"q" * 32, max_files=5)
        assert store.keep(_session(), "analyzer_error")
    finally:
        os.umask(old)
    assert_private(tmp_path / "data")
