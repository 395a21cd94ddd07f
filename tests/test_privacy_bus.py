"""What leaves the collector over Kafka is de-identified: a PII conversation sent with the real
OTel SDK to a `turnwatch serve --role collector` process, read back from the broker."""

from __future__ import annotations

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from tests.kafka_broker import read_topic
from tests.otel_chatbot import provider_with, run_conversation
from tests.test_bus_kafka import Role
from tests.test_deid_receiver import PII_EXCHANGES, RAW_VALUES, USER_ID
from tests.waiting import eventually
from turnwatch.bus.records import SESSIONS

pytestmark = pytest.mark.slow  # a Kafka-protocol broker and a collector subprocess loading Presidio


def test_sessions_on_the_bus_carry_no_raw_pii(bootstrap, tmp_path):
    collector = Role("collector", bootstrap, tmp_path).wait_started()
    try:
        exporter = OTLPSpanExporter(endpoint=f"{collector.otlp}/v1/traces")
        provider = provider_with(BatchSpanProcessor(exporter))
        run_conversation(provider, "conv-bus-pii", PII_EXCHANGES, user_id=USER_ID)
        provider.shutdown()
        eventually(
            lambda: collector.metric("turnwatch_deid_sessions_total"),
            lambda deidentified: deidentified >= 1,
            timeout=60,
            what="de-identification",
        )
        [record] = read_topic(bootstrap, SESSIONS, 1)
    finally:
        assert collector.stop() == 0
    logs = collector.process.stderr.read()
    assert b'"deidentified":true' in record.value
    for raw in [*RAW_VALUES, "conv-bus-pii"]:
        assert raw.encode() not in record.value
        assert raw not in logs
