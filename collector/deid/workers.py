"""Where de-identification runs: one thread in the collector process, or worker processes.

spaCy holds the GIL, so one process uses one core. `deid.workers` processes (default: the cores
the container may use) each build their own analyzer, cache and pseudonymizer from the same
configuration and key, so a session's findings do not depend on which worker took it. A session
always goes to the same worker (by its id), which keeps its revisions in order and their
repeated texts in that worker's cache.
"""

from __future__ import annotations

import concurrent.futures
import math
import multiprocessing
import os
import zlib
from collections.abc import Callable
from pathlib import Path

from turnwatch.collector.deid.config import DeidConfig
from turnwatch.collector.deid.deidentifier import Deidentified, Deidentifier

from turnwatch.schema import Session

CPU_MAX = Path("/sys/fs/cgroup/cpu.max")


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

    def submit(self, session: Session) -> concurrent.futures.Future[Deidentified]:
        return self._submit(_lane(session, self.size), session)

    def close(self) -> None:
        return None


def _lane(session: Session, size: int) -> int:
    return zlib.crc32(session.session_id.encode("utf-8", "surrogatepass")) % size


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
