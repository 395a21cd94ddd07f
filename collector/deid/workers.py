"""Where de-identification runs: one thread in the collector process, or worker processes.

spaCy holds the GIL, so one process uses one core. `deid.workers` processes (default: the cores
the container may use) each build their own analyzer, cache and pseudonymizer from the same
configuration and key, so a session's findings do not depend on which worker took it. A new
session goes to the worker with the fewest sessions in flight; its later revisions go to the
same worker while the session is among the last `RECENT_SESSIONS` submitted, which keeps their
repeated texts in that worker's cache. Sessions went by a hash of their id before: with a few
sessions in flight the hash often gave one worker three quarters of them (12 of 16 in one
benchmark round) while the other idled.
"""

from __future__ import annotations

import concurrent.futures
import math
import multiprocessing
import os
import threading
from collections.abc import Callable
from pathlib import Path

from turnwatch.collector.deid.config import DeidConfig
from turnwatch.collector.deid.deidentifier import Deidentified, Deidentifier

from turnwatch.lru import LRU
from turnwatch.schema import Session

CPU_MAX = Path("/sys/fs/cgroup/cpu.max")
RECENT_SESSIONS = 10_000
"""Sessions whose worker is remembered for their next revision (about 100 bytes each)."""


def container_cores() -> int:
    """Cores this process may use: its CPU affinity, capped by a cgroup v2 CPU quota."""
    cores = len(os.sched_getaffinity(0))
    try:
        quota, period = CPU_MAX.read_text().split()
    except (OSError, ValueError):
        return cores
    if quota == "max":
        return cores
    return max(1, min(cores, math.ceil(int(quota) / int(period))))


_worker: Deidentifier | None = None


def _start_worker(config: DeidConfig, secret: bytes) -> None:
    # Imported here: the stage module loads Presidio, which only workers need.
    from turnwatch.collector.deid.stage import build_deidentifier

    global _worker
    _worker = build_deidentifier(config, secret)


def _deidentify(session: Session) -> Deidentified:
    assert _worker is not None, "worker process not initialised"
    return _worker.deidentify(session)


class Workers:
    """`size` lanes; `submit` runs `deidentify` in the session's lane."""

    def __init__(self, size: int, submit: Callable[[int, Session], concurrent.futures.Future]):
        self.size = size
        self._submit = submit
        self._lanes: LRU[str, int] = LRU(RECENT_SESSIONS)
        self._in_flight = [0] * size
        # Futures finish on the executors' threads, beside the event loop's submits.
        self._lock = threading.Lock()

    def submit(self, session: Session) -> concurrent.futures.Future[Deidentified]:
        with self._lock:
            lane = self._lane(session.session_id)
            self._in_flight[lane] += 1
        try:
            future = self._submit(lane, session)
        except BaseException:
            self._finished(lane)  # a closed or broken executor took nothing
            raise
        future.add_done_callback(lambda _done: self._finished(lane))
        return future

    def in_flight(self) -> list[int]:
        """Sessions submitted and not yet finished, per lane."""
        with self._lock:
            return list(self._in_flight)

    def _lane(self, session_id: str) -> int:
        lane = self._lanes.get(session_id)
        if lane is None:
            lane = min(range(self.size), key=self._in_flight.__getitem__)
            self._lanes.put(session_id, lane)
        return lane

    def _finished(self, lane: int) -> None:
        with self._lock:
            self._in_flight[lane] -= 1

    def close(self) -> None:
        return None


class ThreadWorker(Workers):
    """One dedicated thread with the collector's own deidentifier: the analyzer is not
    thread-safe, and a session abandoned at its time limit must not run beside the next one."""

    def __init__(self, deidentifier: Deidentifier) -> None:
        self.deidentifier = deidentifier
        self._executor = concurrent.futures.ThreadPoolExecutor(1, "turnwatch-deid")
        super().__init__(
            1, lambda _lane, session: self._executor.submit(deidentifier.deidentify, session)
        )

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)


class ProcessWorkers(Workers):
    def __init__(self, config: DeidConfig, secret: bytes, size: int) -> None:
        # forkserver: the collector has threads and an event loop, which a fork would copy.
        context = multiprocessing.get_context("forkserver")
        self._executors = [
            concurrent.futures.ProcessPoolExecutor(
                1, mp_context=context, initializer=_start_worker, initargs=(config, secret)
            )
            for _ in range(size)
        ]
        super().__init__(
            size, lambda lane, session: self._executors[lane].submit(_deidentify, session)
        )

    def start(self) -> None:
        """Load every worker's model now, so start-up fails (or is slow) before serving."""
        for future in [executor.submit(_ready) for executor in self._executors]:
            future.result()

    def close(self) -> None:
        for executor in self._executors:
            executor.shutdown(wait=False, cancel_futures=True)


def _ready() -> bool:
    return _worker is not None
