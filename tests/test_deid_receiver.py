"""PII sent by a real OTel SDK chatbot through the real receiver never leaves de-identified."""

from __future__ import annotations

import logging

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from turnwatch.collector.deid.secret import session_id_key
from turnwatch.collector.session_keys import session_id_for

from tests.conftest import CapturingSink, make_settings
from tests.otel_chatbot import Exchange, provider_with, run_conversation
from tests.otlp_requests import LOOPBACK
from tests.stages import collector_into
from turnwatch.app.serve import BackgroundService

pytestmark = pytest.mark.slow  # Presidio and the spaCy model

EMAIL = "maria.garcia41@example.com"
PHONE = "(415) 867-5309"
CARD = "4111-1111-1111-1111"
IBAN = "GB82 WEST 1234 5698 7654 32"
ADDRESS = "221 Baker Street"
NAME = "rose hill"
USER_ID = "maria.garcia41@example.com"

PII_EXCHANGES = [
    Exchange(
        user=f"Hi, my name is {NAME}. My email is {EMAIL}, where is my order?",
        answer=f"Thanks {NAME}, I found the order for {EMAIL}.",
        tool="lookup_customer",
        tool_arguments={"customer_email": EMAIL},
        tool_result={"name": NAME, "phone": PHONE, "address": ADDRESS},
    ),
    Exchange(
        user=f"Please charge card {CARD} and refund to IBAN {IBAN}.",
        answer="Done. Is there anything else I can help you with?",
        tool="charge",
        tool_arguments={"card": CARD, "iban": IBAN},
        tool_result={"ok": True, "note": f"charged card {CARD}"},
    ),
]
RAW_VALUES = [EMAIL, PHONE, CARD, IBAN, ADDRESS, NAME, "867-5309", "4111", "WEST 1234"]


def test_pii_through_the_receiver_is_deidentified_everywhere(tmp_path, caplog):
    caplog.set_level(logging.DEBUG)
    captured = CapturingSink()
    # A longer idle timeout than the suite's 0.5 s: on a loaded machine the SDK's batch exports
    # of one conversation can arrive far enough apart to split it into two revisions.
    settings = make_settings(data_dir=str(tmp_path), **{"sessions.idle_timeout_seconds": 3})
    background = BackgroundService(settings, collector_into(captured, deidentified=True))
    service = background.start()
    try:
        exporter = OTLPSpanExporter(
            endpoint=f"http://127.0.0.1:{service.ports.otlp_http}/v1/traces"
        )
        provider = provider_with(BatchSpanProcessor(exporter))
        run_conversation(provider, "conv-pii-1", PII_EXCHANGES, user_id=USER_ID)
        provider.shutdown()

        [session] = captured.wait_for(1, timeout=30)
        metrics = LOOPBACK.get(f"http://127.0.0.1:{service.ports.ops}/metrics").text
    finally:
        background.stop()

    assert session.deidentified
    # Names and labels only: a raw value such as "4111" can turn up among a sample's digits.
    series = "\n".join(line.rpartition(" ")[0] for line in metrics.splitlines())
    delivered = session.model_dump_json()
    for raw in [*RAW_VALUES, "conv-pii-1"]:
        assert raw not in delivered
        assert raw not in caplog.text
        assert raw not in series
    assert session.user_id.startswith("<USER_ID_")
    # Referential integrity: the address in the tool arguments is the token in the text.
    lookup = session.turns[1].tool_calls[0]
    email_token = lookup.arguments["customer_email"]
    assert email_token.startswith("<EMAIL_ADDRESS_")
    assert email_token in session.turns[0].text and email_token in session.turns[2].text
    assert lookup.result["name"] in session.turns[0].text
    # The session id is keyed with the deployment's key: the conversation id cannot be linked.
    secret = (tmp_path / "deid.secret").read_bytes().strip()
    assert session.session_id == session_id_for("support-bot", "conv-pii-1", session_id_key(secret))
    another_key = session_id_key(b"another" * 4)
    assert session.session_id != session_id_for("support-bot", "conv-pii-1", another_key)
    assert session.trace_ids and all(len(trace) == 32 for trace in session.trace_ids)
    assert "turnwatch_deid_sessions_total 1.0" in metrics
    assert 'turnwatch_deid_entities_total{entity="CREDIT_CARD"}' in metrics
