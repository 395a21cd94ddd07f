"""A judge endpoint that is slow, failing or talking nonsense, seen through the running product.

`turnwatch serve` (all roles, de-identification on, the shipped contracts) with
`scorers.judge.endpoint` pointing at a real loopback OpenAI-compatible server that turns bad one
way at a time. For each fault a conversation with an unapproved refund goes in as real OTel SDK
spans, and its score record must still come out: the checks part first, then the judged part
with the deterministic findings intact, every judge metric unscored with a reason (never a 0),
the failure counted by reason.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from tests.conftest import make_settings
from tests.otel_chatbot import provider_with, run_conversation
from tests.stages import all_roles
from tests.test_judge_loopback import LoopbackJudge, Reply, running
from tests.test_pipeline_e2e import CONTRACTS, UNAPPROVED_REFUND
from tests.waiting import eventually
from turnwatch.app.serve import BackgroundService
from turnwatch.bus.records import ExporterRecord, Output
from turnwatch.scores import Part, ScoreRecord

pytestmark = pytest.mark.slow  # Presidio and the spaCy model (serve with de-identification)

FAULTS: dict[str, tuple[Reply, str, str]] = {
    # fault -> the endpoint's answer to every request, the judge error reason it must count,
    # and the words of the metrics' unscored reason
    "slow": (Reply(delay=1.5), "timeout", "timed out"),
    "failing": (
        Reply(status=500, body={"error": {"message": "internal error"}}),
        "http_5xx",
        "endpoint failed",
    ),
    "garbage": (
        Reply(content="<html><body>Bad gateway, try later</body></html>"),
        "invalid_json",
        "did not match the format",
    ),
}


class Scores:
    """Exporter-side observer: the judged score records that left the scorer, and how many
    checks parts came before them."""

    def __init__(self) -> None:
        self.records: list[ScoreRecord] = []
        self.checks = 0

    async def __call__(self, topic: str, record: ExporterRecord) -> list[Output]:
        if isinstance(record, ScoreRecord) and record.part is Part.CHECKS:
            self.checks += 1
        elif isinstance(record, ScoreRecord):
            self.records.append(record)
        return []


@pytest.fixture
def judge(monkeypatch) -> Iterator[LoopbackJudge]:
    with running() as server:
        endpoint = {
            "BASE_URL": server.base_url,
            "MODEL": "judge-under-test",
            "TIMEOUT_SECONDS": "0.5",
            "MAX_RETRIES": "1",
            "BACKOFF_SECONDS": "0.01",
            "REQUESTS_PER_SECOND": "1000",
        }
        for key, value in endpoint.items():
            monkeypatch.setenv(f"TURNWATCH_SCORERS__JUDGE__ENDPOINT__{key}", value)
        monkeypatch.setenv("TURNWATCH_JUDGE_API_KEY", "sk-loopback-test")
        yield server


def test_judge_faults_leave_metrics_unscored_and_checks_intact(judge, tmp_path):
    scores = Scores()
    settings = make_settings(data_dir=str(tmp_path), **{"scorers.contracts_dir": str(CONTRACTS)})
    assert settings.scorers.judge.endpoint.base_url == judge.base_url
    background = BackgroundService(settings, all_roles(tap=scores))
    service = background.start(timeout=60)
    registry = service.registry
    exporter = OTLPSpanExporter(endpoint=f"http://127.0.0.1:{service.ports.otlp_http}/v1/traces")
    provider = provider_with(BatchSpanProcessor(exporter))
    try:
        for number, (fault, (reply, _reason, _words)) in enumerate(FAULTS.items()):
            judge.responder = lambda request, reply=reply: reply
            run_conversation(provider, f"judge-{fault}", UNAPPROVED_REFUND, user_id=f"u-{number}")
            provider.force_flush()
            eventually(
                lambda: len(scores.records),
                lambda scored, n=number: scored > n,
                timeout=60,
                what=f"the {fault} score",
            )
    finally:
        provider.shutdown()
        background.stop()

    assert len(scores.records) == len(FAULTS) == scores.checks
    assert {record.part for record in scores.records} == {Part.JUDGED}
    for (fault, (_reply, reason, words)), record in zip(
        FAULTS.items(), scores.records, strict=True
    ):
        # The deterministic side is untouched by the judge's trouble.
        assert {f.check for f in record.critical_failures} >= {"approval"}, fault
        assert record.turn_level and record.session_level, fault
        # Every judge metric is "not scored, because ...", none is a 0.
        assert record.metrics, fault
        for metric in record.metrics:
            assert metric.value is None, (fault, metric)
            assert words in metric.unscored_reason, (fault, metric)
        errors = registry.get_sample_value("turnwatch_judge_errors_total", {"reason": reason})
        assert errors and errors > 0, (fault, reason)
    scored = [
        s.value
        for family in registry.collect()
        if family.name == "turnwatch_judge_scores"
        for s in family.samples
        if s.name.endswith("_total") and s.labels.get("outcome") == "scored"
    ]
    assert sum(scored) == 0
    assert len(judge.requests) > 0
