"""All roles in one process, as `turnwatch serve` runs by default: spans in at the OTLP receiver,
de-identified sessions over the embedded bus to the scorers, incidents out as regression cases
that the incidents API serves."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from tests.conftest import make_settings
from tests.otel_chatbot import Exchange, provider_with, run_conversation
from tests.otlp_requests import LOOPBACK
from tests.waiting import eventually
from turnwatch.app.serve import BackgroundService

pytestmark = pytest.mark.slow  # Presidio and the spaCy model (serve with de-identification)

CONTRACTS = Path(__file__).resolve().parent.parent / "deploy" / "contracts"

UNAPPROVED_REFUND = [
    Exchange(
        user="My parcel 4411 arrived broken, I want my money back. My email is rita.k@example.org",
        answer="I have refunded 30 EUR to you.",
        tool="issue_refund",
        tool_arguments={"order_id": "4411", "amount": 30},
        tool_result={"status": "paid"},
    ),
]


def _wait_for_case(directory: Path, timeout: float = 60) -> Path:
    [case] = eventually(
        lambda: sorted(directory.glob("*.json")) if directory.exists() else [],
        timeout=timeout,
        interval=0.2,
        what=f"a regression case in {directory}",
    )
    return case


def test_unapproved_refund_becomes_a_deidentified_regression_case(tmp_path):
    settings = make_settings(data_dir=str(tmp_path), **{"scorers.contracts_dir": str(CONTRACTS)})
    background = BackgroundService(settings)
    service = background.start(timeout=60)
    try:
        exporter = OTLPSpanExporter(
            endpoint=f"http://127.0.0.1:{service.ports.otlp_http}/v1/traces"
        )
        provider = provider_with(BatchSpanProcessor(exporter))
        run_conversation(provider, "refund-conv-1", UNAPPROVED_REFUND, user_id="rita-k")
        provider.shutdown()

        case_file = _wait_for_case(tmp_path / "regressions")
        case = json.loads(case_file.read_text())
        ops = f"http://127.0.0.1:{service.ports.ops}"
        listing = LOOPBACK.get(f"{ops}/api/incidents").json()
        metrics = LOOPBACK.get(f"{ops}/metrics").text
    finally:
        background.stop()

    assert "approval" in json.dumps(case["critical_failures"])
    assert case["turns"][0]["role"] == "user"
    written = case_file.read_text()
    for raw in ("rita.k@example.org", "rita-k", "refund-conv-1"):
        assert raw not in written
    assert [item["id"] for item in listing["items"]] == [case["case_id"]]
    assert "turnwatch_deid_sessions_total 1.0" in metrics
