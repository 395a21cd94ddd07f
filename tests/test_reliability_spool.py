"""The disk spool when the disk refuses a write part-way (ENOSPC, EFBIG): nothing torn is left
behind, the caller sees a full spool (backpressure), and writing resumes when room comes back,
without a consumer having to free anything first."""

from __future__ import annotations

import asyncio
import errno
import io
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from tests.test_scorers_builders import session, user
from tests.waiting import eventually
from turnwatch.bus.config import BusConfig, EmbeddedBusConfig
from turnwatch.bus.embedded import EmbeddedBus
from turnwatch.bus.metrics import BusMetrics
from turnwatch.bus.records import SESSIONS
from turnwatch.bus.spool import DiskSpool, FifoFull, Item, SpoolWriteFailed
from turnwatch.schema import Session


class FullDisk(io.RawIOBase):
    """Wraps the spool's segment file: while `full`, writes a few bytes, then fails like a disk
    that ran out of room in the middle of a frame."""

    def __init__(self, inner: io.FileIO) -> None:
        self.inner = inner
        self.full = True
        self.refused = 0

    def write(self, data) -> int:  # type: ignore[override]
        if self.full:
            self.inner.write(bytes(data[:5]))
            self.refused += 1
            raise OSError(errno.ENOSPC, "No space left on device")
        return self.inner.write(data)

    def tell(self) -> int:
        return self.inner.tell()

    def seek(self, offset: int, whence: int = 0) -> int:
        return self.inner.seek(offset, whence)

    def fileno(self) -> int:
        return self.inner.fileno()

    def close(self) -> None:
        self.inner.close()


def _session_record(number: int) -> Session:
    return session(user("hi"), session_id=f"s-{number}")


def test_a_write_the_disk_refuses_leaves_no_torn_frame_and_resumes(tmp_path: Path):
    spool = DiskSpool(tmp_path, max_bytes=1 << 20, segment_bytes=1 << 20)
    spool.append(Item(SESSIONS, "k0", b'{"n":0}'))
    segment = next(tmp_path.glob("*.seg"))
    size = segment.stat().st_size
    disk = FullDisk(spool._writer)
    spool._writer = disk  # type: ignore[assignment]

    with pytest.raises(SpoolWriteFailed) as refused:
        spool.append(Item(SESSIONS, "k1", b'{"n":1}'))
    assert isinstance(refused.value, FifoFull)  # callers treat it as backpressure
    assert segment.stat().st_size == size and len(spool) == 1

    disk.full = False
    spool.append(Item(SESSIONS, "k2", b'{"n":2}'))
    spool.close()
    reopened = DiskSpool(tmp_path, max_bytes=1 << 20, segment_bytes=1 << 20)
    keys = []
    while (item := reopened.peek()) is not None:
        keys.append(item.key)
        reopened.pop()
    assert keys == ["k0", "k2"]  # the refused record never existed; nothing after it was lost
    reopened.close()


def test_embedded_publish_waits_on_a_full_disk_and_goes_on_when_room_comes_back(tmp_path):
    config = BusConfig(embedded=EmbeddedBusConfig(spool=True))
    metrics = BusMetrics(CollectorRegistry())

    async def run() -> None:
        bus = EmbeddedBus(config, metrics, tmp_path)
        fifo = bus._topics[SESSIONS].fifo
        assert isinstance(fifo, DiskSpool)
        disk = FullDisk(fifo._writer)
        fifo._writer = disk  # type: ignore[assignment]
        publish = asyncio.create_task(bus.publish(SESSIONS, "k", _session_record(1)))
        # Refused, then tried again after a while and refused again: still waiting, not failed.
        await asyncio.to_thread(eventually, lambda: disk.refused, lambda refused: refused >= 2)
        assert not publish.done()  # waiting, not failed, not dropped
        disk.full = False  # room again, and no consumer popped anything meanwhile
        await asyncio.wait_for(publish, timeout=5)
        assert len(fifo) == 1
        await bus.close()

    asyncio.run(run())
    assert metrics.spool_full._value.get() == 1
    assert metrics.produced.labels(SESSIONS)._value.get() == 1
