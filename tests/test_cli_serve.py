"""`turnwatch serve` as a user runs it: a subprocess on free ports, fed by the real OTel SDK."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from prometheus_client.parser import text_string_to_metric_families

from tests.otel_chatbot import SUPPORT_EXCHANGES, provider_with, run_conversation
from tests.otlp_requests import LOOPBACK

pytestmark = pytest.mark.slow  # `turnwatch serve` subprocesses


def serve_command(data_dir: Path, otlp_port: int = 0) -> list[str]:
    """`turnwatch serve` on free ports (or the given OTLP port) with its own state directory."""
    return [
        *(sys.executable, "-m", "turnwatch", "serve", "--otlp-port", str(otlp_port)),
        *("--grpc-port", "0", "--ops-port", "0", "--data-dir", str(data_dir)),
    ]


def _samples(ops_url: str) -> dict[tuple[str, tuple], float]:
    text = LOOPBACK.get(f"{ops_url}/metrics").text
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def test_serve_ingests_drains_on_sigterm_and_logs_no_message_text(tmp_path):
    env = {**os.environ, "TURNWATCH_SESSIONS__IDLE_TIMEOUT_SECONDS": "30"}
    process = subprocess.Popen(
        serve_command(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        banner = process.stdout.readline()
        http_port, _grpc_port, ops_port = (int(p) for p in re.findall(r":(\d+)", banner)[:3])
        ops_url = f"http://127.0.0.1:{ops_port}"
        assert LOOPBACK.get(f"{ops_url}/healthz").json() == {"status": "ok"}
        assert LOOPBACK.get(f"{ops_url}/readyz").status_code == 200

        exporter = OTLPSpanExporter(endpoint=f"http://127.0.0.1:{http_port}/v1/traces")
        provider = provider_with(SimpleSpanProcessor(exporter))
        run_conversation(provider, "cli-conversation", SUPPORT_EXCHANGES)
        provider.shutdown()

        samples = _samples(ops_url)
        assert samples[("turnwatch_spans_received_total", (("signal", "traces"),))] == 10
        assert samples[("turnwatch_sessions_open", ())] == 1
        assert ("turnwatch_sessions_closed_total", (("reason", "idle"),)) not in samples

        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=20) == 0
    finally:
        if process.poll() is None:
            process.kill()
    logs = process.stderr.read()
    entries = [line for line in logs.splitlines() if line.strip()]
    assert any('"event":"session closed"' in line and '"turns":8' in line for line in entries)
    assert any('"close_reason":"shutdown"' in line for line in entries)
    for exchange in SUPPORT_EXCHANGES:
        assert exchange.user not in logs and exchange.answer not in logs
    assert "user-7" not in logs and "cli-conversation" not in logs


def test_serve_refuses_a_port_in_use_with_a_clear_message(tmp_path):
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen()
    port = holder.getsockname()[1]
    try:
        result = subprocess.run(
            serve_command(tmp_path, otlp_port=port),
            capture_output=True,
            text=True,
            timeout=30,
        )
    finally:
        holder.close()
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert f"cannot start: cannot bind OTLP/HTTP to 127.0.0.1:{port}: " in result.stderr
    assert "--otlp-port" in result.stderr


def test_production_mode_without_a_pseudonym_key_refuses_to_start(tmp_path):
    env = {**os.environ, "TURNWATCH_MODE": "production"}
    result = subprocess.run(
        serve_command(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert result.returncode == 2
    assert "deid.secret" in result.stderr and "Traceback" not in result.stderr
    assert not list(tmp_path.iterdir())
