"""Fixtures of the client-library tests: the loopback chat server, a turnwatch collector with
de-identification in front of a capturing stage, and a runner for one client script."""

from __future__ import annotations

import os
import secrets
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.clients.chat_server import ChatServer
from tests.clients.environments import HERE
from tests.clients.scenario import Settings
from tests.conftest import Running, make_settings, settled, start_service
from tests.waiting import eventually
from turnwatch.schema import Session

DEID_SECRET = "client-libraries-test-secret"
CLIENT_TIMEOUT_SECONDS = 120


@pytest.fixture(scope="module")
def chat() -> Iterator[ChatServer]:
    server = ChatServer().start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def turnwatch(tmp_path_factory) -> Iterator[Running]:
    # Idle timeout of a few seconds: a client's batch exports of one conversation may arrive
    # apart, and must not split it into two revisions.
    settings = make_settings(
        data_dir=str(tmp_path_factory.mktemp("turnwatch")),
        **{"deid.secret": DEID_SECRET, "sessions.idle_timeout_seconds": 3},
    )
    running = start_service(settings, deidentify=True)
    yield running
    running.background.stop()


Client = Callable[..., tuple[Settings, list[Session]]]


@pytest.fixture
def client(chat: ChatServer, turnwatch: Running) -> Client:
    """Run one client process against the chat server and turnwatch; return what it was told
    and the sessions of its service once the collector has settled."""

    def run(
        command: list[str], service: str, cwd: Path = HERE, **env: str
    ) -> tuple[Settings, list[Session]]:
        settings = Settings(
            otlp_endpoint=turnwatch.http_url,
            chat_base_url=chat.base_url,
            service=service,
            run=f"{service}-{secrets.token_hex(3)}",
        )
        environment = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": os.environ.get("HOME", ""),
            "PYTHONPATH": f"{HERE}{os.pathsep}{HERE / 'scripts'}",
            "OTEL_SERVICE_NAME": service,
            "OPENAI_API_KEY": "loopback",
            **settings.environment(),
            **env,
        }
        finished = subprocess.run(
            command,
            cwd=cwd,
            env=environment,
            capture_output=True,
            text=True,
            timeout=CLIENT_TIMEOUT_SECONDS,
        )
        assert finished.returncode == 0, finished.stderr[-4000:]
        # Settled: every session closed and handed on, so the count is final once the sink
        # (after de-identification) holds as many as were handed on.
        handed_on = settled(turnwatch.ops_url, timeout=30).delivered
        sessions = eventually(
            lambda: list(turnwatch.sink.sessions),
            lambda sessions: len(sessions) >= handed_on,
            what=f"{handed_on} de-identified sessions",
        )
        return settings, [session for session in sessions if session.service == service]

    return run
