"""What the OTLP/HTTP and OTLP/gRPC receivers share: auth, admission, decoding off the event loop,
durable acceptance and ingest accounting.

Decompressing and decoding a request is CPU work that grows with the body (tens of milliseconds
for a large request, seconds for a hostile one), so it runs in a small thread pool
(`otlp.decode_workers`) and the event loop keeps answering `/healthz`, other requests and the
pipeline's sweeper meanwhile. Only the decoding leaves the loop: the pipeline's state is
loop-confined, so what a request decoded is handed to the pipeline back on the loop. At most
`otlp.max_concurrent_requests` requests are read and decoded at once, which bounds the memory
that bodies and decoding take together; past it the answer is 503 / UNAVAILABLE.

`ingest` is the one way a decoded request enters the pipeline. With the write-ahead log on, the
inflated body is in the log before the pipeline sees it, and `ingest` returns only once the log's
fsync policy holds, so a receiver answers 200 for nothing the log could still lose.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from turnwatch.collector.body import decompress
from turnwatch.collector.config import OtlpConfig
from turnwatch.collector.metrics import CollectorMetrics
from turnwatch.collector.otlp_common import DecodeLimits, Decoder, DecodeResult
from turnwatch.collector.pipeline import CollectorPipeline
from turnwatch.collector.wal.requests import RequestBody
from turnwatch.collector.wal.segments import WalFull, WalWriteFailed

from turnwatch.logs import RateLimitedLog

log = logging.getLogger("turnwatch.collector.receiver")


@dataclass(slots=True)
class IngestOutcome:
    rejected: int
    message: str


class NotAccepted(Exception):
    """The request cannot be acknowledged now (503 / UNAVAILABLE; the client retries)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Decoded:
    """A decoded request: the inflated body (what the write-ahead log keeps) and its items."""

    body: bytes
    result: DecodeResult


def decode_body(
    decoder: Decoder, chunks: list[bytes], encoding: str, limits: DecodeLimits, inflated_cap: int
) -> Decoded:
    """Join, decompress and decode one request body (run in the decoding threads). The chunk
    list is emptied as it is joined, so the request's raw bytes are freed once inflated."""
    data = b"".join(chunks)
    chunks.clear()
    body = decompress(data, encoding, inflated_cap)
    del data
    return Decoded(body, decoder(body, limits))


def not_decoded(body: bytes, limits: DecodeLimits) -> DecodeResult:
    """The decoder of a signal turnwatch does not use (metrics): the body is read and
    decompressed within the same caps as any other, then dropped."""
    return DecodeResult()


class Receiver:
    def __init__(
        self, config: OtlpConfig, pipeline: CollectorPipeline, metrics: CollectorMetrics
    ) -> None:
        self.config = config
        self.pipeline = pipeline
        self.metrics = metrics
        self.wal = pipeline.wal
        self.span_limits = DecodeLimits(
            config.max_attribute_bytes, config.max_spans_per_request, config.max_values_per_request
        )
        self.log_limits = DecodeLimits(
            config.max_attribute_bytes,
            config.max_log_records_per_request,
            config.max_values_per_request,
        )
        token = config.auth_token.get_secret_value() if config.auth_token else None
        self._expected = token.encode() if token else None
        self._decoding = ThreadPoolExecutor(config.decode_workers, "turnwatch-decode")
        self._in_flight = 0
        self.warnings = RateLimitedLog(log)

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

    def saturated(self) -> bool:
        """True when `max_concurrent_requests` are being read or decoded already."""
        return self._in_flight >= self.config.max_concurrent_requests

    @contextlib.contextmanager
    def in_flight(self) -> Iterator[None]:
        """One request being read and decoded (the caller checked `saturated` first)."""
        self._in_flight += 1
        self.metrics.requests_in_flight.set(self._in_flight)
        try:
            yield
        finally:
            self._in_flight -= 1
            self.metrics.requests_in_flight.set(self._in_flight)

    def limits_for(self, signal: str) -> DecodeLimits:
        return self.span_limits if signal == "traces" else self.log_limits

    async def decode(
        self, decoder: Decoder, chunks: list[bytes], encoding: str, signal: str
    ) -> Decoded:
        """Decompress and decode off the event loop; raises what the decoder raises."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(
            self._decoding,
            decode_body,
            decoder,
            chunks,
            encoding,
            self.limits_for(signal),
            self.config.max_decompressed_bytes,
        )

    def close(self) -> None:
        self._decoding.shutdown(wait=False, cancel_futures=True)

    def reject_request(self, transport: str, signal: str, reason: str) -> None:
        self.reject(transport, reason)
        self.metrics.requests.labels(transport, signal, "rejected").inc()

    def ignore_request(self, transport: str, signal: str) -> IngestOutcome:
        """An export of a signal turnwatch does not use (metrics): answered, counted, dropped."""
        self.metrics.requests.labels(transport, signal, "ignored").inc()
        return IngestOutcome(rejected=0, message="")

    def reject(self, transport: str, reason: str) -> None:
        """A refusal before there was a request to answer (a connection closed, a header or
        body that never came): counted by reason, logged at most every few seconds."""
        self.metrics.request_rejections.labels(transport, reason).inc()
        self.warnings.warning("otlp request refused", reason, transport=transport)

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
