"""`turnwatch serve` in one process (embedded bus on its spool, write-ahead log on, the default
SQLite session store) killed with SIGKILL, or stopped with SIGTERM (its drain running out), while
its evaluation events are queued behind a backend that answers 503 (the OTLP "try again later"),
then started again on the same data directory with the backend answering 200: the score records
were held in the exporter's offset ledger, so the embedded spool had not acknowledged them, the
restart delivers them again and every result of every score arrives, by its `log.record.uid`,
exactly once; the count claims find the redelivered records, so the restarted process counts
none of them again.
"""

from __future__ import annotations

import sqlite3

import pytest
from turnwatch.collector.deid.secret import session_id_key
from turnwatch.collector.session_keys import session_id_for
from turnwatch.exporters.evaluation_events import record_events
from turnwatch.exporters.score_exporter import parts_of

from tests.conftest import settled
from tests.otlp_requests import LOOPBACK, PROTOBUF, chat_span, trace_request
from tests.serve_process import Serve, bus_idle, scored
from tests.test_evaluation_events import LogsReceiver
from tests.test_exporter import score_record
from tests.waiting import eventually

pytestmark = pytest.mark.slow  # two `turnwatch serve` subprocesses

SERVICE = "events-kill-bot"
SECRET = "events-kill-deployment-secret-0123456789"
CONVERSATIONS = 12
UID = "log.record.uid"


def uids_of(record) -> set[str]:
    events = record_events(record, checks=True, judged=True)
    return {
        attribute.value.string_value
        for _part, event in events
        for attribute in event.attributes
        if attribute.key == UID
    }


def post_conversation(base: str, key: str) -> None:
    spans = [chat_span(key, 0), chat_span(key, 1, extra={"turnwatch.session.end": "true"})]
    response = LOOPBACK.post(
        f"{base}/v1/traces",
        content=trace_request(spans, SERVICE).SerializeToString(),
        headers={"Content-Type": PROTOBUF},
        timeout=30,
    )
    assert response.status_code == 200, response.text


def counted(serve: Serve, outcome: str) -> float:
    return serve.metric("turnwatch_exporter_records_total", outcome=outcome)


@pytest.mark.parametrize("signal", ["SIGKILL", "SIGTERM"])
def test_a_process_stopped_with_events_queued_sends_them_after_the_restart(tmp_path, signal):
    receiver = LogsReceiver(status=503)
    data_dir = tmp_path / "data"
    env = {
        "TURNWATCH_DEID__SECRET": SECRET,
        "TURNWATCH_WAL__ENABLED": "true",
        "TURNWATCH_BUS__SCORER_PROCESSOR": "tests.kafka_broker:score_echo",
        "TURNWATCH_EXPORTER__EVALUATION_EVENTS__ENDPOINT": receiver.url,
        "TURNWATCH_EXPORTER__EVALUATION_EVENTS__TIMEOUT_SECONDS": "5",
    }
    id_key = session_id_key(SECRET.encode())
    sessions = {
        session_id_for(SERVICE, f"kill-{number}", id_key) for number in range(CONVERSATIONS)
    }
    try:
        first = Serve(data_dir, **env)
        try:
            for number in range(CONVERSATIONS):
                post_conversation(first.otlp_url, f"kill-{number}")
            # Every score record taken by the exporter, all its events queued, none accepted.
            eventually(
                lambda: counted(first, "exported"),
                lambda exported: exported == CONVERSATIONS,
                timeout=120,
                what="every score record exported",
            )
            # The test's exporter plug-in logs each record after turnwatch's exporters took it.
            logged = eventually(
                lambda: scored(tmp_path / "scored.log"),
                lambda logged: len(logged) == CONVERSATIONS,
                what="every score record logged",
            )
            records = {
                (session_id, revision): score_record(session_id, revision, SERVICE)
                for session_id, revision in logged
            }
            assert {session_id for session_id, _ in records} == sessions
            expected = set().union(*(uids_of(record) for record in records.values()))
            eventually(
                lambda: first.metric("turnwatch_evaluation_events_queued"),
                lambda queued: queued == len(expected),
                what="every event queued",
            )
            eventually(lambda: receiver.requests, what="the backend asked")
        finally:
            # SIGTERM: the drain waits bus.shutdown_timeout_seconds on the backend, then stops.
            code = first.kill() if signal == "SIGKILL" else first.terminate()
        if signal == "SIGTERM":
            assert code == 0, first.logs()[-3000:]  # nothing dropped: the spool keeps it
            assert "evaluation events not all sent at shutdown" in first.logs()
        assert receiver.accepted == []
        assert {status for status, _ in receiver.requests} == {503}

        receiver.status = 200
        second = Serve(data_dir, **env)
        try:
            eventually(
                lambda: {event[UID] for event in list(receiver.accepted)},
                lambda accepted: accepted == expected,
                timeout=120,
                what="every event accepted after the restart",
            )
            settled(second.ops_url, timeout=60)
            bus_idle(second)  # every record acknowledged: its events settled and marked
            # Delivered again, claimed before: counted by the killed process, not again here.
            assert counted(second, "duplicate") == CONVERSATIONS
            assert counted(second, "exported") == 0
            exported = second.metric("turnwatch_evaluation_events_total", outcome="exported")
            assert exported == len(expected)
        finally:
            code = second.terminate()
        assert code == 0, second.logs()[-3000:]
    finally:
        receiver.close()
    assert len(receiver.accepted) == len(expected)  # each once
    with sqlite3.connect(data_dir / "sessions.db") as db:
        marked = set(db.execute("SELECT session_id, revision, part FROM sent_events"))
    assert marked == {
        (session_id, revision, part)
        for (session_id, revision), record in records.items()
        for part in parts_of(record)
    }
