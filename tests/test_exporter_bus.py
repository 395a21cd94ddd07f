"""The exporter fed through the real embedded bus: spans in, scorer, `turnwatch.scores`, metrics.

This is the wiring the all-in-one process uses by default (`turnwatch/app/roles.py`); the exporter
role runs the same handler on records read from Kafka.
"""

from __future__ import annotations

from tests.conftest import make_settings
from tests.otlp_requests import LOOPBACK, PROTOBUF, chat_span, encode, metric_value, trace_request
from tests.stages import all_roles_raw
from tests.waiting import eventually
from turnwatch.app.serve import BackgroundService


def test_scores_from_the_bus_reach_metrics_once_per_revision():
    settings = make_settings(**{"otlp.grpc_enabled": False, "exporter.services": ["support-bot"]})
    background = BackgroundService(settings, all_roles_raw())
    service = background.start()
    ops = f"http://127.0.0.1:{service.ports.ops}"
    try:
        for number in range(3):
            body = encode(trace_request([chat_span(f"bus-conv-{number}")], "support-bot"), PROTOBUF)
            answer = LOOPBACK.post(
                f"http://127.0.0.1:{service.ports.otlp_http}/v1/traces",
                content=body,
                headers={"Content-Type": PROTOBUF},
            )
            assert answer.status_code == 200
        eventually(
            lambda: metric_value(ops, "turnwatch_sessions_scored_total", service="support-bot"),
            lambda scored: scored >= 3,
            timeout=30,
            what="three scores on /metrics",
        )
        assert metric_value(ops, "turnwatch_exporter_records_total", outcome="exported") == 3
        joint = sum(
            metric_value(ops, "turnwatch_joint_success_total", service="support-bot", outcome=o)
            for o in ("success", "failure", "unscored")
        )
        assert joint == 3
        assert metric_value(ops, "turnwatch_check_results_total", service="support-bot") > 0
        assert metric_value(ops, "turnwatch_score_export_delay_seconds_count") == 3
        assert metric_value(ops, "turnwatch_end_to_end_latency_seconds_count") == 3
    finally:
        background.stop()
