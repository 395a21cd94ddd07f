"""Broker and scorer faults across the three roles, on a broker that keeps its data.

Tansu runs on S3 storage against a local S3-compatible server (moto's) that the test starts, so a
stopped broker comes back with its topics, records and committed offsets, as a real one does; the
faults therefore test turnwatch, not a broker that forgets. The broker is taken away with SIGTERM,
which drops every connection with sends in flight (tests/kafka_broker.py says why not SIGKILL:
Tansu's S3 storage then loses the last record it acknowledged, with or without turnwatch). The
roles are `turnwatch serve --role collector|scorer|exporter` subprocesses (test_bus_kafka.py's
`Role`); a client keeps sending conversations through every fault and counts what was
acknowledged.

- The broker goes away while requests keep coming and sends are in flight: OTLP keeps answering
  200, the collector spools, and once the broker is back every acknowledged session is on the
  topic, those from before the outage included.
- Full reconciliation: 200 conversations into the collector (write-ahead log on) while the broker
  goes away mid-flight and comes back, and the first scorer is killed (SIGKILL) mid-batch during
  the outage, with score records in its spool, and replaced by one on a fresh data directory (a
  new pod):
  200 scored out at the exporter, each session exactly once. The spooled score records die with
  the first scorer; the sessions they came from are redelivered because a consumer commits no
  offset while its process's spool holds records.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator

import pytest
from turnwatch.collector.deid.secret import session_id_key
from turnwatch.collector.session_keys import session_id_for

from tests.kafka_broker import S3Server, TansuBroker, external_bootstrap, read_topic
from tests.otlp_requests import DEFAULT_SERVICE, LOOPBACK
from tests.serve_process import SCORE_LOG, scored
from tests.test_bus_embedded import post_session
from tests.test_bus_kafka import Role, processed
from tests.waiting import eventually
from turnwatch.bus.records import SCORES, SESSIONS

# The collector's deployment secret, so the test knows the session ids it publishes.
SECRET = "broker-outage-deployment-secret-0123456789"
ID_KEY = session_id_key(SECRET.encode())

pytestmark = [
    pytest.mark.slow,  # a broker, an S3 server and `turnwatch serve --role` subprocesses
    pytest.mark.skipif(external_bootstrap() is not None, reason="kills its own broker"),
]


class Conversations:
    """A client sending `count` conversations, one request each (closed by its end marker),
    retrying a 503 after its Retry-After as an OTLP exporter does."""

    def __init__(self, base: str, prefix: str, count: int, pause: float = 0.02) -> None:
        self.base, self.pause = base, pause
        self.keys = [f"{prefix}-{number}" for number in range(count)]
        self.acknowledged: list[str] = []
        self.retried = 0
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        for key in self.keys:
            while (response := post_session(self.base, key)).status_code == 503:
                self.retried += 1
                time.sleep(float(response.headers.get("Retry-After", "1")))
            if response.status_code != 200:
                raise AssertionError(f"{key}: HTTP {response.status_code}")
            self.acknowledged.append(key)
            time.sleep(self.pause)

    def wait_for(self, count: int, timeout: float = 60) -> None:
        eventually(
            lambda: len(self.acknowledged),
            lambda acknowledged: acknowledged >= count or not self.thread.is_alive(),
            timeout=timeout,
            interval=0.02,
            what=f"{count} conversations acknowledged",
        )
        assert len(self.acknowledged) >= count, "the client stopped"


@pytest.fixture
def broker() -> Iterator[TansuBroker]:
    storage = S3Server()
    storage.start()
    broker = TansuBroker(storage=storage)
    broker.start()
    yield broker
    broker.stop()
    storage.stop()


def test_a_broker_gone_mid_flight_comes_back_with_every_acknowledged_session(broker, tmp_path):
    collector = Role(
        "collector", broker.bootstrap, tmp_path / "collector", TURNWATCH_DEID__SECRET=SECRET
    ).wait_started()
    client = Conversations(collector.otlp, "mid-flight", 100, pause=0.05)
    try:
        client.thread.start()
        client.wait_for(15)
        broker.stop(graceful=True)  # the client sending, the producer mid-batch
        eventually(
            lambda: collector.metric("turnwatch_bus_broker_up"),
            lambda up: up == 0,
            timeout=30,
            what="the collector to see the broker gone",
        )
        eventually(  # acknowledged while the broker is down: spooled
            lambda: collector.metric("turnwatch_bus_spooled_total"),
            lambda spooled: spooled >= 10,
            timeout=30,
            what="sessions spooled during the outage",
        )
        ready = LOOPBACK.get(f"{collector.ops}/readyz")
        assert ready.status_code == 503 and "bus" in ready.json()["checks"]

        broker.start()  # same port, same storage: what it stored before is still there
        client.thread.join(120)
        assert client.acknowledged == client.keys and client.retried == 0
        eventually(
            lambda: collector.metric("turnwatch_bus_spool_records"),
            lambda spooled: spooled == 0,
            # The drain sends one record per round trip, and each produce on Tansu's S3 storage
            # is an object write: about 4 records/s on a loaded 2-core machine.
            timeout=180,
            what="the spool to drain",
        )
        records = read_topic(broker.bootstrap, SESSIONS, 100, timeout=30, distinct_keys=True)
        on_topic = {record.key.decode() for record in records}
        assert on_topic == {session_id_for(DEFAULT_SERVICE, key, ID_KEY) for key in client.keys}
        assert collector.metric("turnwatch_bus_records_produced_total", topic=SESSIONS) == 100
        assert LOOPBACK.get(f"{collector.ops}/readyz").status_code == 200
    finally:
        assert collector.stop() == 0


def test_200_in_200_scored_once_through_a_broker_outage_and_a_scorer_kill(broker, tmp_path):
    score_log = tmp_path / "scored.log"
    scoring = {
        "TURNWATCH_BUS__SCORER_PROCESSOR": "tests.kafka_broker:score_echo",
        # Slower than the client sends, so the scorer is behind whenever the broker goes: it
        # goes on scoring what it fetched before, and its score records go to its spool.
        "TURNWATCH_TEST_SCORER_DELAY": "0.2",
    }
    collector = Role(
        "collector",
        broker.bootstrap,
        tmp_path / "collector",
        TURNWATCH_WAL__ENABLED="true",
        TURNWATCH_DEID__SECRET=SECRET,
    )
    first = Role("scorer", broker.bootstrap, tmp_path / "scorer-1", **scoring)
    exporter = Role(
        "exporter",
        broker.bootstrap,
        tmp_path / "exporter",
        TURNWATCH_BUS__EXPORTER_HANDLER="tests.serve_process:log_score",
        **{SCORE_LOG: str(score_log)},
    )
    roles = [collector, first, exporter]
    for role in roles:
        role.wait_started()
    # Still sending when the broker goes: at the default pause the last of the 200 were sometimes
    # on the topic before the broker was down, and the collector had nothing to spool.
    client = Conversations(collector.otlp, "reconciled", 200, pause=0.1)
    try:
        client.thread.start()
        eventually(
            lambda: processed(first, SESSIONS),
            lambda count: count >= 5,
            timeout=60,
            what="the first scorer to be scoring",
        )
        client.wait_for(60)
        broker.stop(graceful=True)  # mid-flight: the collector producing, the scorer in a batch
        eventually(  # acknowledged meanwhile, held in the spool (the stop takes Tansu ~5 s)
            lambda: collector.metric("turnwatch_bus_spooled_total"),
            lambda spooled: spooled >= 1,
            timeout=30,
            what="sessions spooled during the outage",
        )
        # Killed while the broker is away, so its spool cannot drain meanwhile: killed after the
        # broker was back, the scorer had sometimes scored everything and emptied its spool first.
        eventually(
            lambda: first.metric("turnwatch_bus_spool_records"),
            lambda spooled: spooled >= 1,
            timeout=60,
            interval=0.05,
            what="score records in the first scorer's spool",
        )
        first.process.kill()  # mid-batch: up to 5 records polled, no offset committed
        first.process.wait(5)
        broker.start()
        # A new pod: a fresh data directory, so the killed scorer's spool is gone with it.
        roles.append(Role("scorer", broker.bootstrap, tmp_path / "scorer-2", **scoring))
        roles[-1].wait_started()
        client.thread.join(120)
        assert len(client.acknowledged) == 200
        eventually(
            lambda: collector.metric("turnwatch_bus_spool_records"),
            lambda spooled: spooled == 0,
            # The drain sends one record per round trip, and each produce on Tansu's S3 storage
            # is an object write: about 4 records/s on a loaded 2-core machine.
            timeout=180,
            what="the collector's spool to drain into the restarted broker",
        )

        eventually(
            lambda: processed(exporter, SCORES),
            lambda count: count >= 200,
            timeout=180,
            interval=0.5,
            what="200 score records at the exporter",
        )
        # Each session scored exactly once where it comes out, whatever was redelivered.
        per_session = Counter(session for session, _revision in scored(score_log).elements())
        assert set(per_session) == {
            session_id_for(DEFAULT_SERVICE, key, ID_KEY) for key in client.keys
        }
        assert max(per_session.values()) == 1
        assert processed(exporter, SCORES) == 200
        assert collector.metric("turnwatch_bus_records_produced_total", topic=SESSIONS) == 200
        eventually(  # the collector's log lets go once the sessions are on the bus
            lambda: collector.metric("turnwatch_wal_held_sessions"),
            lambda held: held == 0,
            what="the write-ahead log to hold nothing",
        )
        # The second took over mid-stream, the sessions whose score records died with the
        # first among what it scored.
        assert processed(roles[-1], SESSIONS) >= 1
    finally:
        codes = [role.stop() for role in roles]
    assert codes[0] == 0 and codes[2:] == [0, 0], codes  # the killed scorer aside
