"""What the OTLP/HTTP and OTLP/gRPC receivers share: auth, overload and ingest accounting."""

from __future__ import annotations

import hmac
from dataclasses import dataclass

from turnwatch.collector.config import OtlpConfig
from turnwatch.collector.metrics import CollectorMetrics
from turnwatch.collector.otlp_common import DecodeLimits, DecodeResult
from turnwatch.collector.pipeline import CollectorPipeline
from turnwatch.collector.records import LogView, SpanView


@dataclass(slots=True)
class IngestOutcome:
    rejected: int
    message: str


class Receiver:
    def __init__(
        self, config: OtlpConfig, pipeline: CollectorPipeline, metrics: CollectorMetrics
    ) -> None:
        self.config = config
        self.pipeline = pipeline
        self.metrics = metrics
        self.limits = DecodeLimits(max_attribute_bytes=config.max_attribute_bytes)
        token = config.auth_token.get_secret_value() if config.auth_token else None
        self._expected = token.encode() if token else None

    def authorized(self, authorization: str | None) -> bool:
        if self._expected is None:
            return True
        # The auth scheme is case-insensitive (RFC 9110 section 11.1): "bearer x" is valid.
        scheme, _, credentials = (authorization or "").strip().partition(" ")
        presented = credentials.strip().encode("utf-8", "replace")
        token_ok = hmac.compare_digest(presented, self._expected)  # constant time, always run
        return scheme.lower() == "bearer" and token_ok

    def overloaded(self) -> bool:
        return self.pipeline.overloaded()

    def reject_request(self, transport: str, signal: str, reason: str) -> None:
        self.metrics.request_rejections.labels(transport, reason).inc()
        self.metrics.requests.labels(transport, signal, "rejected").inc()

    def ignore_request(self, transport: str, signal: str) -> IngestOutcome:
        """An export of a signal turnwatch does not use (metrics): answered, counted, dropped."""
        self.metrics.requests.labels(transport, signal, "ignored").inc()
        return IngestOutcome(rejected=0, message="")

    def ingest_spans(self, transport: str, result: DecodeResult[SpanView]) -> IngestOutcome:
        failed = self.pipeline.accept_spans(result.items)
        return self._account(transport, "traces", failed, result)

    def ingest_logs(self, transport: str, result: DecodeResult[LogView]) -> IngestOutcome:
        failed = self.pipeline.accept_logs(result.items)
        return self._account(transport, "logs", failed, result)

    def _account(
        self, transport: str, signal: str, failed: int, result: DecodeResult
    ) -> IngestOutcome:
        """Count what the pipeline took; items a dialect decoder failed on are rejections."""
        accepted = len(result.items) - failed
        result.reject("decoder_error", failed)
        self.metrics.items_received.labels(signal).inc(accepted)
        for reason, count in result.rejection_reasons.items():
            self.metrics.items_rejected.labels(signal, reason).inc(count)
        outcome = "partial" if result.rejected else "accepted"
        self.metrics.requests.labels(transport, signal, outcome).inc()
        return IngestOutcome(rejected=result.rejected, message=result.error_message())
