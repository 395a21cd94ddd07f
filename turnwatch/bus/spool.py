"""FIFO stores for records in transit: in memory, or on disk (the spool).

The disk spool is a directory of append-only segment files and a cursor file naming the first
record not yet acknowledged. Records survive a process restart or crash (they are written to the
OS before `append` returns; there is no fsync, so not a power cut). One process owns a spool
directory at a time (an exclusive lock), since two writers would interleave records.

The reader may `take` records ahead of acknowledging them (a consumer with an offset ledger
acknowledges only below the oldest record its handler still holds): a taken record is no longer
`waiting`, but it keeps its room until `acknowledge` reaches it, and after a restart the reader
gets every record not acknowledged again. So the bounds (records, bytes) cover what is taken and
held too: a held record makes `append` refuse (back-pressure), never the spool grow.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import struct
import zlib
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from turnwatch.ownership import own_directory
from turnwatch.private import private_opener

log = logging.getLogger("turnwatch.bus.spool")

_FRAME = struct.Struct(">II")  # body length, crc32 of body
_BODY = struct.Struct(">HH")  # topic length, key length; then topic, key, value


class FifoFull(Exception):
    """No room for the record; the caller waits (backpressure) and tries again."""


class SpoolWriteFailed(FifoFull):
    """The disk refused the write (no space, file size limit, I/O error). Nothing was stored:
    the partial frame is cut off again, and the caller waits and retries as on a full spool, so
    a full disk is backpressure (OTLP 503), never a lost record or a dead consumer."""


class SpoolLocked(Exception):
    """Another process owns the spool directory."""


@dataclass(frozen=True, slots=True)
class Item:
    topic: str
    key: str
    value: bytes

    def encode(self) -> bytes:
        topic, key = self.topic.encode(), self.key.encode()
        body = _BODY.pack(len(topic), len(key)) + topic + key + self.value
        return _FRAME.pack(len(body), zlib.crc32(body)) + body

    @classmethod
    def decode(cls, body: bytes) -> Item:
        topic_len, key_len = _BODY.unpack_from(body)
        start = _BODY.size
        topic = body[start : start + topic_len].decode()
        key = body[start + topic_len : start + topic_len + key_len].decode()
        return cls(topic, key, body[start + topic_len + key_len :])


class Fifo(Protocol):
    """One reader, serial: `peek` the first record not taken, process it, then `pop` it (take
    and acknowledge), or `take` it and `acknowledge` later, oldest first.

    `len` counts every record not acknowledged (the bound applies to it), `waiting` those not
    taken."""

    def __len__(self) -> int: ...
    @property
    def size_bytes(self) -> int: ...
    @property
    def waiting(self) -> int: ...
    def append(self, item: Item) -> None: ...
    def peek(self) -> Item | None: ...
    def take(self) -> None: ...
    def acknowledge(self, count: int) -> None: ...
    def pop(self) -> None: ...
    def close(self) -> None: ...


class MemoryFifo:
    def __init__(self, max_records: int) -> None:
        self.max_records = max_records
        self._items: deque[Item] = deque()
        self._taken = 0
        self._bytes = 0

    def __len__(self) -> int:
        return len(self._items)

    @property
    def size_bytes(self) -> int:
        return self._bytes

    @property
    def waiting(self) -> int:
        return len(self._items) - self._taken

    def append(self, item: Item) -> None:
        if len(self._items) >= self.max_records:
            raise FifoFull
        self._items.append(item)
        self._bytes += len(item.value)

    def peek(self) -> Item | None:
        return self._items[self._taken] if self.waiting else None

    def take(self) -> None:
        if self.waiting:
            self._taken += 1

    def acknowledge(self, count: int) -> None:
        for _ in range(min(count, self._taken)):
            self._bytes -= len(self._items.popleft().value)
            self._taken -= 1

    def pop(self) -> None:
        self.take()
        self.acknowledge(1)

    def close(self) -> None:
        return None


class DiskSpool:
    def __init__(
        self, directory: Path, max_bytes: int, segment_bytes: int, max_records: int | None = None
    ) -> None:
        self.directory = directory
        self.max_bytes = max_bytes
        self.segment_bytes = segment_bytes
        self.max_records = max_records
        lock = own_directory(directory)
        if lock is None:
            raise SpoolLocked(str(directory))
        self._lock = lock
        self._segments = sorted(int(p.stem) for p in directory.glob("*.seg"))
        # The first record not acknowledged (kept in the cursor file), and the first not taken.
        self._ack_segment, self._ack_offset = self._load_cursor()
        self._head: tuple[Item, int] | None = None
        self._count = 0
        self._bytes = 0
        if self._segments and self._ack_segment not in self._segments:
            self._ack_segment, self._ack_offset = self._segments[0], 0
        self._recover()
        if not self._segments:
            self._segments.append(self._ack_segment)
        self._read_segment, self._read_offset = self._ack_segment, self._ack_offset
        self._taken: deque[tuple[int, int, int]] = deque()
        """Each record taken and not acknowledged: (segment, offset after it, frame length)."""
        self._writer = self._open_writer(self._segments[-1])
        self._write_error: str | None = None

    def _open_writer(self, number: int) -> io.FileIO:
        # Unbuffered: a failed write must not leave bytes in a buffer that a later write would
        # flush into the middle of the next frame.
        return open(self._path(number), "ab", buffering=0, opener=private_opener)

    def _path(self, number: int) -> Path:
        return self.directory / f"{number:012d}.seg"

    def _load_cursor(self) -> tuple[int, int]:
        try:
            segment, offset = (self.directory / "cursor").read_text().split()
            return int(segment), int(offset)
        except (OSError, ValueError):
            return (self._segments[0] if self._segments else 1), 0

    def _recover(self) -> None:
        """Drop acknowledged segments, count what is left, cut a torn tail from a crash."""
        self._drop_before(self._ack_segment)
        for number in self._segments:
            path = self._path(number)
            data = path.read_bytes()
            position = self._ack_offset if number == self._ack_segment else 0
            while position + _FRAME.size <= len(data):
                length, crc = _FRAME.unpack_from(data, position)
                body = data[position + _FRAME.size : position + _FRAME.size + length]
                if len(body) < length or zlib.crc32(body) != crc:
                    break
                position += _FRAME.size + length
                self._count += 1
                self._bytes += _FRAME.size + length
            if position < len(data):
                log.warning("spool segment truncated", extra={"segment": number, "at": position})
                with open(path, "r+b") as handle:
                    handle.truncate(position)

    def __len__(self) -> int:
        return self._count

    @property
    def size_bytes(self) -> int:
        return self._bytes

    @property
    def waiting(self) -> int:
        return self._count - len(self._taken)

    def append(self, item: Item) -> None:
        frame = item.encode()
        if self._bytes + len(frame) > self.max_bytes or (
            self.max_records is not None and self._count >= self.max_records
        ):
            raise FifoFull
        try:
            self._write(frame)
        except OSError as exc:
            self._write_failed(exc)
            raise SpoolWriteFailed(exc.strerror or type(exc).__name__) from None
        if self._write_error is not None:
            log.info("spool writable again", extra={"spool": self.directory.name})
            self._write_error = None
        self._count += 1
        self._bytes += len(frame)

    def _write(self, frame: bytes) -> None:
        if self._writer.tell() >= self.segment_bytes:
            number = self._segments[-1] + 1
            writer = self._open_writer(number)  # may fail too: change nothing before it works
            self._writer.close()
            self._segments.append(number)
            self._writer = writer
        start = self._writer.tell()
        view = memoryview(frame)
        try:
            while view:
                view = view[self._writer.write(view) or 0 :]
        except OSError:
            # Cut the torn frame off: recovery would stop at it and drop every later record.
            with contextlib.suppress(OSError):
                os.ftruncate(self._writer.fileno(), start)
                self._writer.seek(start)  # tell() is the next frame's start again
            raise

    def _write_failed(self, exc: OSError) -> None:
        reason = exc.strerror or type(exc).__name__
        if self._write_error != reason:
            # Once per failure streak: the caller retries every fraction of a second.
            log.error(
                "spool write failed; publishing waits until the disk has room",
                extra={"spool": self.directory.name, "error": reason, "errno": exc.errno},
            )
            self._write_error = reason

    def peek(self) -> Item | None:
        if self._head is not None:
            return self._head[0]
        if self.waiting == 0:
            return None
        while True:
            with open(self._path(self._read_segment), "rb") as handle:
                handle.seek(self._read_offset)
                header = handle.read(_FRAME.size)
                if len(header) == _FRAME.size:
                    length, _crc = _FRAME.unpack(header)
                    body = handle.read(length)
                    self._head = (Item.decode(body), _FRAME.size + length)
                    return self._head[0]
            # This segment is read to its end: the next record starts the next one. The segment
            # stays until every record in it is acknowledged.
            self._read_segment = self._segments[self._segments.index(self._read_segment) + 1]
            self._read_offset = 0

    def take(self) -> None:
        if self.peek() is None:
            return
        assert self._head is not None
        length = self._head[1]
        self._read_offset += length
        self._taken.append((self._read_segment, self._read_offset, length))
        self._head = None

    def acknowledge(self, count: int) -> None:
        """Let go of the `count` oldest records taken: their room is free, and the cursor file
        names the record after them, so a restart does not deliver them again."""
        count = min(count, len(self._taken))
        if count == 0:
            return
        for _ in range(count):
            segment, offset, length = self._taken.popleft()
            self._bytes -= length
            self._count -= 1
        self._ack_segment, self._ack_offset = segment, offset
        if self._count == 0 and segment != self._segments[-1]:
            # Nothing is left, so no record follows in the segments after this one but the last
            # (empty): the next record appended starts it.
            self._ack_segment, self._ack_offset = self._segments[-1], 0
            self._read_segment, self._read_offset = self._ack_segment, 0
        self._drop_before(self._ack_segment)
        self._save_cursor()

    def pop(self) -> None:
        """Take the next record and acknowledge the oldest taken (for a reader that takes none
        ahead, the same one)."""
        self.take()
        self.acknowledge(1)

    def _drop_before(self, number: int) -> None:
        """Delete the segments before `number`: every record in them is acknowledged."""
        for finished in [n for n in self._segments if n < number]:
            self._path(finished).unlink(missing_ok=True)
        self._segments = [n for n in self._segments if n >= number]

    def _save_cursor(self) -> None:
        temporary = self.directory / "cursor.tmp"
        try:
            with open(temporary, "w", opener=private_opener) as handle:
                handle.write(f"{self._ack_segment} {self._ack_offset}")
            os.replace(temporary, self.directory / "cursor")
        except OSError as exc:
            # The record is acknowledged in memory; a stale cursor only means redelivery after a
            # restart (at-least-once), so a full disk must not stop the consumer here.
            log.warning(
                "spool cursor not saved",
                extra={"spool": self.directory.name, "error": exc.strerror},
            )

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._writer.close()
        self._lock.close()
