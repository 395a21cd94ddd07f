"""The `SessionSink` that de-identifies each session before the next stage sees it.

With one worker (a thread) `deliver` returns once the session is de-identified and handed on. With
worker processes up to two sessions per worker are in flight (one running, one queued, so a worker
never waits for the event loop between sessions; a session's revisions stay with one worker, so one
each could leave another idle): `deliver` returns once its session is submitted (with the task that
hands it on, so the handoff keeps the session's write-ahead log claim and bus positions until then,
and is told in the step the next stage takes the session: `HandedOn`) and waits only when that many
are in flight, so back-pressure still reaches the handoff queue and, through it, the receivers
(503). Sessions of one session id are handed on in the order they arrived; `flush` waits for
everything in flight (shutdown).
"""

from __future__ import annotations

import asyncio
import logging
import time

from turnwatch.collector.deid.config import DeidConfig
from turnwatch.collector.deid.deidentifier import Quarantined, QuarantineReason
from turnwatch.collector.deid.metrics import DeidMetrics
from turnwatch.collector.deid.quarantine import QuarantineStore
from turnwatch.collector.deid.workers import Workers
from turnwatch.collector.pipeline import HandedOn, SessionSink

from turnwatch.schema import Session

log = logging.getLogger("turnwatch.deid")

# The worker checks its deadline between texts; this covers one text that overruns inside spaCy.
DEADLINE_GRACE_SECONDS = 1.0
IN_FLIGHT_PER_WORKER = 2


class DeidentifyingSink:
    def __init__(
        self,
        workers: Workers,
        config: DeidConfig,
        downstream: SessionSink,
        metrics: DeidMetrics,
        quarantine: QuarantineStore | None = None,
    ) -> None:
        self.workers = workers
        self.downstream = downstream
        self.metrics = metrics
        self.quarantine = quarantine
        self._timeout = config.session_time_limit_seconds + DEADLINE_GRACE_SECONDS
        self._slots: asyncio.Semaphore | None = None
        self._in_flight: dict[str, asyncio.Task[None]] = {}

    async def deliver(self, session: Session, handed_on: HandedOn | None = None) -> bool:
        if self.workers.size == 1:
            return await self._process(session, None, handed_on)
        if self._slots is None:
            self._slots = asyncio.Semaphore(IN_FLIGHT_PER_WORKER * self.workers.size)
        await self._slots.acquire()
        before = self._in_flight.get(session.session_id)
        task = asyncio.create_task(self._in_flight_to_the_end(session, before, handed_on))
        self._in_flight[session.session_id] = task
        task.add_done_callback(lambda done: self._done(session.session_id, done))
        return True

    async def _in_flight_to_the_end(
        self, session: Session, before: asyncio.Task[None] | None, handed_on: HandedOn | None
    ) -> None:
        """`_process` in a task of its own, telling `handed_on` how it ended, in the step it did."""
        try:
            still_in_flight = await self._process(session, before, handed_on)
        except Exception as exc:
            if handed_on is not None:
                handed_on(exc)
            return
        if not still_in_flight and handed_on is not None:
            handed_on(None)

    def _done(self, session_id: str, task: asyncio.Task[None]) -> None:
        assert self._slots is not None
        self._slots.release()
        if self._in_flight.get(session_id) is task:
            del self._in_flight[session_id]

    async def flush(self) -> None:
        """Wait until every session in flight is handed on or quarantined."""
        while self._in_flight:
            await asyncio.gather(*self._in_flight.values(), return_exceptions=True)

    async def _process(
        self, session: Session, before: asyncio.Task[None] | None, handed_on: HandedOn | None
    ) -> bool:
        """De-identify and hand on; whether the next stage is still working on it (False when
        it has it, or the session was quarantined: dropped and counted)."""
        started = time.perf_counter()
        try:
            work = asyncio.wrap_future(self.workers.submit(session))
            result = await asyncio.wait_for(work, self._timeout)
        except Quarantined as exc:
            self._quarantine(session, exc.reason)
            return False
        except TimeoutError:
            self._quarantine(session, QuarantineReason.TIME_LIMIT)
            return False
        except Exception:
            # A worker process that died (BrokenProcessPool) or could not pickle the session.
            self._quarantine(session, QuarantineReason.ANALYZER_ERROR)
            return False
        finally:
            self.metrics.latency.observe(time.perf_counter() - started)
        self.metrics.sessions.inc()
        self.metrics.count_entities(result.entities)
        self.metrics.texts.labels("cache").inc(result.stats.cache_hits)
        self.metrics.texts.labels("analysed").inc(result.stats.analysed)
        if before is not None:
            await asyncio.gather(before, return_exceptions=True)
        return await self.downstream.deliver(result.session, handed_on)

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
        self.workers.close()
