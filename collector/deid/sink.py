"""The `SessionSink` that de-identifies each session before the next stage sees it."""

from __future__ import annotations

import asyncio
import logging
import time
from concurrent.futures import ThreadPoolExecutor

from turnwatch.collector.deid.deidentifier import Deidentifier, Quarantined, QuarantineReason
from turnwatch.collector.deid.metrics import DeidMetrics
from turnwatch.collector.deid.quarantine import QuarantineStore
from turnwatch.collector.pipeline import SessionSink

from turnwatch.schema import Session

log = logging.getLogger("turnwatch.deid")

# The worker checks its deadline between texts; this covers one text that overruns inside spaCy.
DEADLINE_GRACE_SECONDS = 1.0


class DeidentifyingSink:
    def __init__(
        self,
        deidentifier: Deidentifier,
        downstream: SessionSink,
        metrics: DeidMetrics,
        quarantine: QuarantineStore | None = None,
    ) -> None:
        self.deidentifier = deidentifier
        self.downstream = downstream
        self.metrics = metrics
        self.quarantine = quarantine
        self._timeout = deidentifier.config.session_time_limit_seconds + DEADLINE_GRACE_SECONDS
        # One dedicated thread rather than asyncio.to_thread: the analyzer is not thread-safe,
        # and a session abandoned at its time limit must not run beside the next one.
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="turnwatch-deid")

    async def deliver(self, session: Session) -> None:
        started = time.perf_counter()
        loop = asyncio.get_running_loop()
        work = loop.run_in_executor(self._executor, self.deidentifier.deidentify, session)
        try:
            result = await asyncio.wait_for(work, self._timeout)
        except Quarantined as exc:
            self._quarantine(session, exc.reason)
            return
        except TimeoutError:
            self._quarantine(session, QuarantineReason.TIME_LIMIT)
            return
        finally:
            self.metrics.latency.observe(time.perf_counter() - started)
        self.metrics.sessions.inc()
        self.metrics.count_entities(result.entities)
        self.metrics.texts.labels("cache").inc(result.stats.cache_hits)
        self.metrics.texts.labels("analysed").inc(result.stats.analysed)
        await self.downstream.deliver(result.session)

    def _quarantine(self, session: Session, reason: str) -> None:
        self.metrics.quarantined.labels(reason).inc()
        log.warning(
            "session quarantined: de-identification failed",
            extra={
                "session_id": session.session_id,
                "revision": session.revision,
                "reason": reason,
            },
        )
        if self.quarantine is None:
            return
        try:
            stored = self.quarantine.keep(session, reason)
        except OSError:
            stored = False
            log.warning("quarantine write failed", extra={"session_id": session.session_id})
        self.metrics.quarantine_stored.labels("stored" if stored else "dropped").inc()

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)
