"""How `turnwatch serve` composes its roles: de-identification always in front of the bus, each
role only what it needs, and a bad plugin path refused before anything starts."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys

import pytest
from turnwatch.collector.deid.sink import DeidentifyingSink

from tests.conftest import make_settings
from turnwatch.app.collector_role import BusSink
from turnwatch.app.context import ServiceContext
from turnwatch.app.http import bind
from turnwatch.app.roles import build_roles
from turnwatch.app.serve import serve
from turnwatch.bus.plugins import PluginError


def test_the_collector_role_puts_deidentification_between_the_pipeline_and_the_bus(tmp_path):
    context = ServiceContext(make_settings(data_dir=str(tmp_path)))
    roles = build_roles(context, "collector")
    assert roles.collector is not None and roles.consumers == []
    try:
        deidentifying = roles.collector.handoff.next_stage
        assert isinstance(deidentifying, DeidentifyingSink)
        assert isinstance(deidentifying.downstream, BusSink)
        assert deidentifying.downstream.bus is context.built_bus
        assert roles.collector.pipeline.next_stage is roles.collector.handoff
    finally:
        roles.collector.close()


def test_consumer_roles_build_no_collector_and_read_their_own_topics(tmp_path):
    scorer = build_roles(ServiceContext(make_settings(data_dir=str(tmp_path))), "scorer")
    assert scorer.collector is None
    assert [(c.name, c.topics, c.mount) for c in scorer.consumers] == [
        ("scorer", ("turnwatch.sessions",), None)
    ]
    exporter = build_roles(ServiceContext(make_settings(data_dir=str(tmp_path))), "exporter")
    assert exporter.collector is None
    [consumer] = exporter.consumers
    # The session store joins each session with its score record, so it reads sessions too.
    assert consumer.topics == ("turnwatch.sessions", "turnwatch.scores", "turnwatch.incidents")
    assert consumer.mount is not None  # the incidents API and the web view beside /metrics
    settings = make_settings(data_dir=str(tmp_path / "off"), **{"session_store.enabled": False})
    [without_store] = build_roles(ServiceContext(settings), "exporter").consumers
    assert without_store.topics == ("turnwatch.scores", "turnwatch.incidents")


def test_a_bad_plugin_path_stops_serve_before_it_starts(tmp_path):
    settings = make_settings(data_dir=str(tmp_path), **{"bus.exporter_handler": "no_such:handler"})
    started = []

    async def main() -> None:
        await serve(settings, asyncio.Event(), on_started=started.append, role="exporter")

    with pytest.raises(PluginError, match="no_such:handler"):
        asyncio.run(main())
    assert started == []


@pytest.mark.slow  # a subprocess that imports the whole application
def test_the_cli_names_a_bad_plugin_path_and_exits_2(tmp_path):
    command = [sys.executable, "-m", "turnwatch", "serve", "--role", "scorer"]
    command += ["--kafka", "127.0.0.1:9", "--ops-port", "0", "--data-dir", str(tmp_path)]
    result = subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "TURNWATCH_BUS__SCORER_PROCESSOR": "not a path"},
        check=False,
    )
    assert result.returncode == 2, result.stderr
    assert "cannot start: 'not a path' is not of the form module:function" in result.stderr
    assert "Traceback" not in result.stderr


def test_accepted_connections_send_small_answers_without_delay():
    # asyncio sets TCP_NODELAY on an accepted connection only if the listener names IPPROTO_TCP;
    # otherwise each small HTTP answer waits for delayed ACKs (~40 ms on Linux).
    async def accepted_nodelay() -> int:
        loop = asyncio.get_running_loop()
        connected: asyncio.Future[int] = loop.create_future()

        class Probe(asyncio.Protocol):
            def connection_made(self, transport) -> None:
                sock = transport.get_extra_info("socket")
                connected.set_result(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))

        server = await loop.create_server(
            Probe, sock=bind("127.0.0.1", 0, "the probe", "--ops-port")
        )
        port = server.sockets[0].getsockname()[1]
        _reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            return await asyncio.wait_for(connected, 5)
        finally:
            writer.close()
            server.close()

    assert asyncio.run(accepted_nodelay()) == 1
