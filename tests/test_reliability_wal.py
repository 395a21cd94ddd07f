"""The write-ahead log in a running collector, and in `turnwatch serve` under process faults.

In process: a full log answers 503 with Retry-After over HTTP and UNAVAILABLE over gRPC, counted,
with `/readyz` saying why, and takes requests again once trimmed; a shutdown whose drain runs out
keeps the stranded sessions in the log and the next start delivers each once (without the log,
the same shutdown counts them lost); the log refuses to start in front of an in-memory bus.

`turnwatch serve` subprocesses (slow): a SIGTERM with a scorer that never finishes exits 3 and
counts what it dropped without the log, exits 0 with it, and the restart scores each session
once; a disk that refuses the log's writes answers 503, never a 200 for what it did not store.
"""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
from collections.abc import Iterator

import grpc
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2_grpc import TraceServiceStub
from turnwatch.collector.pipeline import HandedOn

from tests.conftest import CapturingSink, Running, make_settings
from tests.kafka_broker import with_bus
from tests.otlp_requests import LOOPBACK, chat_span, metric_value, trace_request
from tests.serve_process import ROOT, Serve, bus_idle, scored, scored_at_least
from tests.stages import collector_into
from tests.test_bus_embedded import post_session
from tests.waiting import eventually
from turnwatch.app.cli import EXIT_DROPPED_AT_SHUTDOWN
from turnwatch.app.collector_role import build_collector
from turnwatch.app.context import ServiceContext
from turnwatch.app.serve import BackgroundService
from turnwatch.app.settings import ConfigError
from turnwatch.schema import Session

REJECTED = "turnwatch_otlp_requests_rejected_total"


class StuckSink(CapturingSink):
    """A next stage that holds every session until released (a stuck bus, say)."""

    def __init__(self) -> None:
        super().__init__()
        self.release: asyncio.Event | None = None

    async def deliver(self, session: Session, handed_on: HandedOn | None = None) -> bool:
        if self.release is None:
            self.release = asyncio.Event()
        await self.release.wait()
        return await super().deliver(session)


def wal_settings(data_dir, **overrides: object):
    return make_settings(
        **{
            "wal.enabled": True,
            "data_dir": data_dir,
            "handoff.shutdown_timeout_seconds": 0.3,
            **overrides,
        }
    )


@pytest.fixture
def stuck(tmp_path) -> Iterator[Running]:
    settings = wal_settings(tmp_path, **{"wal.segment_bytes": 8192, "wal.max_bytes": 24_576})
    sink = StuckSink()
    background = BackgroundService(settings, collector_into(sink))
    running = Running(background, background.start(), sink)
    yield running
    background.call(lambda: sink.release and sink.release.set())
    background.stop()


def test_a_full_log_is_503_over_http_and_unavailable_over_grpc_then_takes_requests_again(stuck):
    refused = None
    for number in range(200):  # the sink holds every session: nothing can be trimmed
        response = post_session(stuck.http_url, f"fill-{number}")
        if response.status_code == 503:
            refused = response
            break
        assert response.status_code == 200
    assert refused is not None, "the log never filled"
    assert refused.headers["Retry-After"] == "2"
    ready = LOOPBACK.get(f"{stuck.ops_url}/readyz")
    assert ready.status_code == 503 and ready.json()["checks"]["wal"] == "write-ahead log full"
    assert post_session(stuck.http_url, "refused-again").status_code == 503
    request = trace_request([chat_span("by-grpc")])
    channel = grpc.insecure_channel(stuck.grpc_endpoint)
    with channel, pytest.raises(grpc.RpcError) as caught:
        TraceServiceStub(channel).Export(request, timeout=10)
    assert caught.value.code() == grpc.StatusCode.UNAVAILABLE
    assert metric_value(stuck.ops_url, "turnwatch_wal_full_total") == 3
    assert metric_value(stuck.ops_url, REJECTED, transport="http", reason="wal_full") == 2
    assert metric_value(stuck.ops_url, REJECTED, transport="grpc", reason="wal_full") == 1

    accepted = number
    sink = stuck.sink
    stuck.background.call(lambda: sink.release.set())
    sink.wait_for(accepted)
    response = eventually(  # trimmed at the next sweep
        lambda: post_session(stuck.http_url, "after-the-trim"),
        lambda answer: answer.status_code == 200,
        what="the log to take requests again",
    )
    assert sink.session_for("after-the-trim").turns


def stranded_run(settings, count: int) -> tuple[BackgroundService, list[str]]:
    """Sessions closed into a stuck next stage, then a shutdown whose drain runs out."""
    sink = StuckSink()
    background = BackgroundService(settings, collector_into(sink))
    running = Running(background, background.start(), sink)
    keys = [f"stranded-{number}" for number in range(count)]
    for key in keys:
        assert post_session(running.http_url, key).status_code == 200
    # Each closed at its end marker, inside its request: all of them are offered by now.
    assert metric_value(running.ops_url, "turnwatch_sessions_closed_total") == count
    eventually(lambda: sink.release is not None, what="the first session to reach the sink")
    background.stop()
    return background, keys


def dropped_at_shutdown(background: BackgroundService) -> float:
    assert background.service is not None
    registry = background.service.registry
    return registry.get_sample_value("turnwatch_handoff_dropped_total", {"reason": "shutdown"})


def test_a_drain_that_runs_out_keeps_the_sessions_in_the_log_for_the_next_start(tmp_path):
    settings = wal_settings(tmp_path)
    first, keys = stranded_run(settings, 5)
    assert first.dropped_at_shutdown == 0
    assert dropped_at_shutdown(first) == 0

    sink = CapturingSink()
    second = BackgroundService(settings, collector_into(sink))
    running = Running(second, second.start(), sink)
    try:
        sink.wait_for(5)
        eventually(
            lambda: metric_value(running.ops_url, "turnwatch_wal_held_sessions"),
            lambda held: held == 0,
            what="the log to let go of the delivered sessions",
        )
        assert sorted(session.conversation_key for session in sink.sessions) == keys
        assert all(len(session.turns) == 4 for session in sink.sessions)
    finally:
        second.stop()


def test_without_the_log_a_drain_that_runs_out_counts_what_it_dropped(tmp_path):
    settings = make_settings(**{"data_dir": tmp_path, "handoff.shutdown_timeout_seconds": 0.3})
    background, _keys = stranded_run(settings, 5)
    assert background.dropped_at_shutdown == 5
    assert dropped_at_shutdown(background) == 5


def test_the_log_refuses_to_start_in_front_of_an_in_memory_bus(tmp_path):
    settings = wal_settings(tmp_path)
    with pytest.raises(ConfigError, match=r"bus\.embedded\.spool: true"):
        build_collector(ServiceContext(settings))
    spooled = with_bus(settings, **{"embedded.spool": True})
    assert spooled.bus.embedded.spool  # the setting the message names is the one that helps


# --- `turnwatch serve` subprocesses -------------------------------------------------------------

STUCK_SCORER = {
    "TURNWATCH_BUS__SCORER_PROCESSOR": "tests.kafka_broker:score_echo",
    "TURNWATCH_TEST_SCORER_DELAY": "3600",
    "TURNWATCH_BUS__EMBEDDED__QUEUE_SIZE": "3",
    "TURNWATCH_HANDOFF__SHUTDOWN_TIMEOUT_SECONDS": "1",
}


def sessions_in(serve: Serve, count: int, prefix: str) -> None:
    for number in range(count):
        assert post_session(serve.otlp_url, f"{prefix}-{number}").status_code == 200
    eventually(  # every session closed, de-identified and on its way to the stuck scorer
        lambda: serve.metric("turnwatch_sessions_closed_total"),
        lambda closed: closed == count,
        what=f"{count} sessions closed",
    )


@pytest.mark.slow
def test_sigterm_with_a_stuck_scorer_exits_3_and_counts_what_it_dropped(tmp_path):
    serve = Serve(tmp_path / "data", TURNWATCH_BUS__EMBEDDED__SPOOL="false", **STUCK_SCORER)
    sessions_in(serve, 10, "dropped")
    eventually(
        lambda: serve.metric("turnwatch_bus_queue_depth", topic="turnwatch.sessions"),
        lambda depth: depth == 3,
        timeout=30,
        what="the sessions topic to fill",
    )
    code = serve.terminate()
    logs = serve.logs()
    assert code == EXIT_DROPPED_AT_SHUTDOWN, logs[-3000:]
    lost_in_handoff = sum(int(n) for n in re.findall(r'"lost_sessions":\s*(\d+)', logs))
    lost_on_the_bus = sum(int(n) for n in re.findall(r'"lost_records":\s*(\d+)', logs))
    assert (lost_in_handoff, lost_on_the_bus) == (7, 3)  # every acknowledged session, counted
    assert '"dropped_at_shutdown":10' in logs.replace(" ", "")
    assert "10 accepted sessions or bus records dropped at shutdown" in logs


@pytest.mark.slow
def test_with_the_log_the_same_sigterm_exits_0_and_the_restart_scores_each_once(tmp_path):
    data_dir, log = tmp_path / "data", tmp_path / "scored.log"
    serve = Serve(data_dir, TURNWATCH_WAL__ENABLED="true", **STUCK_SCORER)
    sessions_in(serve, 10, "kept")
    code = serve.terminate()
    logs = serve.logs()
    assert code == 0, logs[-3000:]
    assert "the write-ahead log keeps the sessions for the next start" in logs
    assert scored(log) == {}

    restarted = Serve(
        data_dir,
        TURNWATCH_WAL__ENABLED="true",
        TURNWATCH_BUS__SCORER_PROCESSOR="tests.kafka_broker:score_echo",
    )
    try:
        scored_at_least(log, 10, timeout=60)
        bus_idle(restarted)
    finally:
        assert restarted.terminate() == 0
    after = scored(log)
    assert len(after) == 10 and max(after.values()) == 1


@pytest.mark.slow
def test_a_disk_that_refuses_the_logs_writes_is_503_never_a_200_for_what_it_lost(tmp_path):
    data_dir, log = tmp_path / "data", tmp_path / "scored.log"
    env = {
        "TURNWATCH_WAL__ENABLED": "true",
        "TURNWATCH_WAL__SEGMENT_BYTES": str(8 << 20),  # one segment, which hits the limit
        "TURNWATCH_BUS__SPOOL__SEGMENT_BYTES": str(16 << 10),  # the spool's roll over first
        "TURNWATCH_BUS__SCORER_PROCESSOR": "tests.kafka_broker:score_echo",
        "TURNWATCH_SESSIONS__IDLE_TIMEOUT_SECONDS": "300",
    }
    full = Serve(data_dir, file_size_limit=160 * 1024, **env)
    # An open conversation holds the segment, so it grows until the disk refuses it.
    assert post_session(full.otlp_url, "holder", end=False).status_code == 200
    acknowledged = 1
    try:
        for number in range(400):
            response = post_session(full.otlp_url, f"disk-{number}")
            if response.status_code == 503:
                break
            assert response.status_code == 200
            acknowledged += 1
        assert response.status_code == 503, "the disk never filled"
        assert full.metric("turnwatch_wal_write_errors_total", operation="write") >= 1
        assert full.metric(REJECTED, transport="http", reason="wal_write_failed") >= 1
        assert LOOPBACK.get(f"{full.ops_url}/healthz").status_code == 200
        assert full.process.poll() is None
    finally:
        code = full.terminate()
    logs = full.logs()
    assert "write-ahead log write failed" in logs and "Traceback" not in logs
    assert code == 0, logs[-3000:]

    roomy = Serve(data_dir, **env)
    try:
        scored_at_least(log, acknowledged, timeout=90)
        bus_idle(roomy)
    finally:
        assert roomy.terminate() == 0
    after = scored(log)  # exactly the acknowledged: a refused request never reached the pipeline
    assert len(after) == acknowledged and max(after.values()) == 1


@pytest.mark.slow
def test_turnwatch_serve_refuses_the_log_with_an_in_memory_bus(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "turnwatch", "serve", "--data-dir", str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", "TURNWATCH_WAL__ENABLED": "true", "HOME": str(tmp_path)},
        timeout=60,
    )
    assert result.returncode == 2
    assert "wal.enabled needs a bus that keeps what it takes" in result.stderr
