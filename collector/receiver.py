"""What the OTLP/HTTP and OTLP/gRPC receivers share: auth, overload, durable acceptance and
ingest accounting.

`ingest` is the one way a decoded request enters the pipeline. With the write-ahead log on, the
body is in the log before the pipeline sees it, and `ingest` returns only once the log's fsync
policy holds, so a receiver answers 200 for nothing the log could still lose.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass

from turnwatch.collector.config import OtlpConfig
from turnwatch.collector.metrics import CollectorMetrics
from turnwatch.collector.otlp_common import DecodeLimits, DecodeResult
from turnwatch.collector.pipeline import CollectorPipeline
from turnwatch.collector.wal.requests import RequestBody
from turnwatch.collector.wal.segments import WalFull, WalWriteFailed


@dataclass(slots=True)
class IngestOutcome:
    rejected: int
    message: str


class NotAccepted(Exception):
    """The request cannot be acknowledged now (503 / UNAVAILABLE; the client retries)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Receiver:
    def __init__(
        self, config: OtlpConfig, pipeline: CollectorPipeline, metrics: CollectorMetrics
    ) -> None:
        self.config = config
        self.pipeline = pipeline
        self.metrics = metrics
        self.wal = pipeline.wal
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

    def overloaded(self) -> str | None:
        """Why a request must be refused now (503 / UNAVAILABLE), or None: `wal_full` while the
        write-ahead log refuses requests, `overloaded` while the pipeline is saturated."""
        if self.wal is not None and self.wal.full:
            self.wal.metrics.full.inc()
            return "wal_full"
        return "overloaded" if self.pipeline.overloaded() else None

    def reject_request(self, transport: str, signal: str, reason: str) -> None:
        self.metrics.request_rejections.labels(transport, reason).inc()
        self.metrics.requests.labels(transport, signal, "rejected").inc()

    async def ingest(
        self, transport: str, body: RequestBody, result: DecodeResult
    ) -> IngestOutcome:
        """Log the request (write-ahead log on), buffer its items, return once it is durable;
        raise NotAccepted when the log is full or the disk refused the write or its fsync."""
        seq = 0
        if self.wal is not None and result.items:
            try:
                seq = self.wal.append(body.kind, body.data)
            except WalFull:
                raise NotAccepted("wal_full") from None
            except WalWriteFailed:
                raise NotAccepted("wal_write_failed") from None
        if body.signal == "traces":
            failed = self.pipeline.accept_spans(result.items, seq)
        else:
            failed = self.pipeline.accept_logs(result.items, seq)
        if seq and self.wal is not None:
            try:
                await self.wal.durable(seq)
            except WalWriteFailed:
                raise NotAccepted("wal_write_failed") from None
        return self._account(transport, body.signal, failed, result)

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
