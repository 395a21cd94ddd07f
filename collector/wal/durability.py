"""Durable acceptance: the write-ahead log as the collector uses it.

What OTLP acknowledged is in the log before the 200: each accepted request is one frame, and the
receiver answers once the fsync policy holds (commit.py). Every session remembers which frames
hold its spans (`OpenSession.sources`: frame sequence number -> first and last item index), so
the log knows what is still needed:

- a session is held while it is open, and after it closes until its record is on the bus, or it
  was dropped by sampling or dropped and counted (a `Claim`, released by the handoff);
- a released claim writes a done mark (key, revision, sources) into the log;
- the oldest segments are deleted once no held session has spans in them (only from the front,
  so a done mark is never deleted while a frame it describes is kept);
- past `high_watermark`, open sessions holding the oldest segment are closed early (`evicted`).

At start, replay reads the done marks, then feeds every request frame left, in order, through the
decoders and the pipeline: open and closed-but-unpublished sessions come back. A rebuilt session
whose spans all lie within done marks of its key (the same frames, the same item ranges) was on
the bus before: it is dropped silently (counted), never published twice. One that mixes done and
new spans is published as a revision after the last done one (replay moves the revision clock
past every done mark's revision), marked truncated when it is the first revision of its key this
run closes: the earlier revisions' frames may be trimmed, so their turns may be missing.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import orjson
from turnwatch.collector.deid.secret import derived_key
from turnwatch.collector.otlp_common import DecodeLimits, TooLarge, Undecodable
from turnwatch.collector.wal.commit import Committer
from turnwatch.collector.wal.config import WalConfig
from turnwatch.collector.wal.metrics import WalMetrics
from turnwatch.collector.wal.requests import DECODERS, REQUEST_KINDS, TRACE_KINDS
from turnwatch.collector.wal.segments import (
    FRAME_OVERHEAD,
    Kind,
    SegmentLog,
    WalFull,
    WalWriteFailed,
)
from turnwatch.collector.wal.sources import Sources

if TYPE_CHECKING:
    from prometheus_client import Counter
    from turnwatch.collector.pipeline import CollectorPipeline
    from turnwatch.collector.sessionizer import OpenSession

log = logging.getLogger("turnwatch.collector.wal")

KEY_PURPOSE = "wal"
DONE_KINDS = frozenset({Kind.DONE})
REPLAY_PAUSE_SECONDS = 0.01


@dataclass(slots=True)
class Claim:
    """A closed session's hold on the log, until the next stage has taken it for good."""

    key: str
    revision: int
    sources: Sources
    owner: Durability
    released: bool = False

    def release(self) -> None:
        if not self.released:
            self.released = True
            self.owner.release(self)

    @property
    def oldest(self) -> int:
        return min(self.sources, default=0)


@dataclass(slots=True)
class DoneMarks:
    """The done marks an earlier run left: which item ranges of which frames went out per key."""

    ranges: dict[str, dict[int, list[tuple[int, int]]]] = field(default_factory=dict)
    revisions: dict[str, int] = field(default_factory=dict)
    closed: set[str] = field(default_factory=set)
    """Keys with done marks that this run has closed a revision of."""

    def add(self, payload: bytes) -> None:
        mark = orjson.loads(payload)
        key = mark["key"]
        by_frame = self.ranges.setdefault(key, {})
        for seq, first, last in mark["sources"]:
            by_frame.setdefault(seq, []).append((first, last))
        self.revisions[key] = max(self.revisions.get(key, 0), mark["revision"])

    def cover(self, key: str, sources: Sources) -> bool:
        """Whether every item of `sources` lies in one range a done mark of `key` names."""
        by_frame = self.ranges.get(key)
        if not by_frame or not sources:
            return False
        for seq, (first, last) in sources.items():
            ranges = by_frame.get(seq, ())
            if not any(start <= first and last <= end for start, end in ranges):
                return False
        return True

    def closing(self, key: str) -> bool:
        """A revision of `key` closes: True when done marks name the key and this is the
        first revision of it this run closes."""
        if key not in self.revisions or key in self.closed:
            return False
        self.closed.add(key)
        return True

    @property
    def last_revision(self) -> int:
        return max(self.revisions.values(), default=0)

    def clear(self) -> None:
        self.ranges.clear()
        self.revisions.clear()
        self.closed.clear()


class Durability:
    def __init__(
        self, config: WalConfig, directory: Path, secret: bytes, metrics: WalMetrics
    ) -> None:
        self.config = config
        self.metrics = metrics
        key = derived_key(secret, KEY_PURPOSE)
        syncing = config.fsync != "never"
        self.log = SegmentLog(directory, key, config.segment_bytes, config.max_bytes, syncing)
        self.committer = Committer(self.log, config.fsync, config.group_commit_ms, metrics)
        self.done = DoneMarks()
        self.replaying = False
        self._full_at: int | None = None
        self._unwritten: deque[bytes] = deque()
        self._request_frames = metrics.appended.labels("request")
        self._done_frames = metrics.appended.labels("done")
        self._marks_failing = False
        self._claims: dict[int, Claim] = {}
        self._update_gauges()

    # --- the request path ------------------------------------------------------------------

    @property
    def full(self) -> bool:
        """The log refused a request and has not shrunk since: refuse the next ones before
        reading their bodies (backpressure until a trim makes room)."""
        return self._full_at is not None and self.log.size_bytes >= self._full_at

    def append(self, kind: Kind, body: bytes) -> int:
        """Write one accepted request; raise WalFull or WalWriteFailed (answer 503)."""
        try:
            seq = self.log.append(kind, body)
        except WalFull:
            self.metrics.full.inc()
            self._full_at = self.log.size_bytes
            raise
        except WalWriteFailed as exc:
            self.metrics.write_errors.labels("write").inc()
            log.error("write-ahead log write failed", extra={"error": str(exc)})
            raise
        self._count_frame(self._request_frames, body)
        self.metrics.size.set(self.log.size_bytes)
        self.metrics.unsynced_frames.set(self.log.last_seq - self.committer.synced_seq)
        return seq

    async def durable(self, seq: int) -> None:
        await self.committer.durable(seq)

    # --- sessions --------------------------------------------------------------------------

    def claim(self, state: OpenSession) -> Claim | None:
        """Take a closing session's sources; None when an earlier run already sent all of it."""
        sources, state.sources = state.sources, {}
        first_since_restart = self.done.closing(state.key)
        if self.done.cover(state.key, sources):
            self.metrics.replay_skipped.inc()
            return None
        if first_since_restart:
            # Its earlier revisions went out before the restart, and this run rebuilt it without
            # closing them first: their turns are not all in it.
            state.head_emitted = True
        claim = Claim(state.key, state.revision, sources, self)
        self._claims[id(claim)] = claim
        return claim

    def release(self, claim: Claim) -> None:
        self._claims.pop(id(claim), None)
        if not claim.sources:
            return
        mark = {
            "key": claim.key,
            "revision": claim.revision,
            "sources": [[seq, first, last] for seq, (first, last) in claim.sources.items()],
        }
        self._unwritten.append(orjson.dumps(mark))
        self._write_marks()

    def _write_marks(self) -> None:
        """Write the done marks waiting, oldest first. One the disk refuses is tried again in
        a fresh segment (a file at its size limit), then at every sweep and at close: a crash
        while it waits would publish its session a second time (at-least-once), never lose it."""
        while self._unwritten:
            payload = self._unwritten[0]
            try:
                try:
                    self.log.append(Kind.DONE, payload, bounded=False)
                except WalWriteFailed:
                    if not self.log.active.last_seq:
                        raise
                    self._roll()
                    self.log.append(Kind.DONE, payload, bounded=False)
            except (WalWriteFailed, OSError) as exc:
                self.metrics.write_errors.labels("write").inc()
                if not self._marks_failing:
                    log.error("write-ahead log done mark not written", extra={"error": str(exc)})
                self._marks_failing = True
                return
            self._marks_failing = False
            self._unwritten.popleft()
            self._count_frame(self._done_frames, payload)

    def _roll(self) -> None:
        try:
            self.log.roll()
        except OSError as exc:
            raise WalWriteFailed(exc.strerror or type(exc).__name__) from None

    def maintain(self, open_sessions: Iterable[OpenSession]) -> list[str]:
        """Trim what nobody holds; return keys of open sessions to close early (high watermark)."""
        self._write_marks()
        holders = [session for session in open_sessions if session.sources]
        oldest = min(
            [next(iter(session.sources)) for session in holders]
            + [claim.oldest for claim in self._claims.values() if claim.sources],
            default=self.log.last_seq + 1,
        )
        segments = self.log.segments
        while len(segments) > 1 and segments[0].last_seq < oldest:
            self._delete(segments[0])
        if len(segments) == 1 and segments[0].last_seq and segments[0].last_seq < oldest:
            # An idle log ends empty: nobody holds the active segment, so start a fresh one.
            try:
                self._roll()
            except WalWriteFailed as exc:
                self.metrics.write_errors.labels("write").inc()
                log.warning("write-ahead log segment not rolled", extra={"error": str(exc)})
            else:
                self._delete(segments[0])
        if not self.log.replayable:
            self.done.clear()
        if self._full_at is not None and self.log.size_bytes < self._full_at:
            self._full_at = None  # trimmed: requests are welcome again
        self._update_gauges(len(holders))
        watermark = self.config.high_watermark * self.config.max_bytes
        if self.log.size_bytes <= watermark or len(segments) < 2:
            return []
        first = segments[0].last_seq
        return [session.key for session in holders if next(iter(session.sources)) <= first]

    def _delete(self, segment) -> None:
        self.log.delete(segment)
        self.metrics.trimmed.inc()

    # --- start and stop --------------------------------------------------------------------

    def start(self) -> None:
        self.committer.start()

    async def replay(
        self,
        pipeline: CollectorPipeline,
        limits_for: Callable[[str], DecodeLimits],
        busy: Callable[[], bool],
    ) -> int:
        """Rebuild the sessions an earlier run left; return the request frames replayed.
        `limits_for` gives the receivers' decoding caps of a signal (traces or logs).

        Runs before the receivers start; yields to the event loop between frames (the ops
        endpoints keep answering) and waits while the next stage is `busy` (a full handoff
        queue would otherwise drop what replay closes)."""
        segments = list(self.log.replayable)
        if not segments:
            return 0
        self.replaying = True
        try:
            for segment in segments:
                for frame in self.log.frames(segment, DONE_KINDS):
                    self.done.add(frame.payload)
                    self.metrics.replayed.labels("done").inc()
            # Revisions this run gives come after every one that went out before the restart,
            # even when the wall clock stepped back across it.
            revisions = pipeline.sessionizer.revisions.clock
            revisions.last = max(revisions.last, self.done.last_revision)
            replayed = 0
            for segment in segments:
                for frame in self.log.frames(segment, REQUEST_KINDS):
                    self._feed(pipeline, frame.kind, frame.payload, frame.seq, limits_for)
                    self.metrics.replayed.labels("request").inc()
                    replayed += 1
                    await asyncio.sleep(0)
                    while busy():
                        await asyncio.sleep(REPLAY_PAUSE_SECONDS)
        finally:
            self.replaying = False
            self.metrics.corrupt.inc(self.log.corrupt_frames)
        log.info(
            "write-ahead log replayed",
            extra={"frames": replayed, "sessions_open": pipeline.sessionizer.open_count},
        )
        return replayed

    def _feed(
        self,
        pipeline: CollectorPipeline,
        kind: Kind,
        body: bytes,
        seq: int,
        limits_for: Callable[[str], DecodeLimits],
    ) -> None:
        traces = kind in TRACE_KINDS
        try:
            result = DECODERS[kind](body, limits_for("traces" if traces else "logs"))
        except (Undecodable, TooLarge, RecursionError, UnicodeDecodeError, ValueError, TypeError):
            # It decoded when it arrived: a changed limit can refuse it now. Counted, skipped.
            log.warning("write-ahead log request no longer decodes", extra={"seq": seq})
            self.metrics.replayed.labels("undecodable").inc()
            return
        if traces:
            pipeline.accept_spans(result.items, seq)
        else:
            pipeline.accept_logs(result.items, seq)

    async def close(self) -> None:
        self._write_marks()
        await self.committer.close()
        self.log.close()

    # --- accounting ------------------------------------------------------------------------

    def _count_frame(self, frames: Counter, payload: bytes) -> None:
        # A done mark is written per session: the gauges follow at the next request or sweep.
        frames.inc()
        self.metrics.appended_bytes.inc(len(payload) + FRAME_OVERHEAD)

    def _update_gauges(self, open_holders: int = 0) -> None:
        self.metrics.size.set(self.log.size_bytes)
        self.metrics.segments.set(len(self.log.segments))
        self.metrics.held_sessions.set(open_holders + len(self._claims))
