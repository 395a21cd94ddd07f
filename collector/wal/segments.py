"""The write-ahead log's files: encrypted, framed records in numbered segment files.

A directory (mode 0700) holds `NNNNNNNNNNNN.wal` segment files (0600) and a `lock` file: one
process owns the directory at a time (an exclusive flock), since two writers would interleave.
A process never appends to a segment an earlier one left: it starts the next number, so recovery
only ever cuts the tail of a file nobody writes any more.

A frame is a header (payload length u32, sequence number u64, kind u8), then an AES-GCM nonce (12
bytes) and the ciphertext with its 16-byte tag. The header is the associated data, so a frame with
another sequence number or kind fails authentication like a changed byte would. The key is
derived from the deployment secret (`deid.secret`): the payloads are raw OTLP requests, message
text before de-identification.

A frame cut short ends its segment: at the end of a segment, that is a write a crash interrupted
(cut off at open and logged); a frame that fails authentication is damage (counted, logged, and
the rest of that segment skipped at replay).
"""

from __future__ import annotations

import contextlib
import logging
import os
import struct
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from enum import IntEnum
from pathlib import Path

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from turnwatch.ownership import own_directory
from turnwatch.private import FILE_MODE

log = logging.getLogger("turnwatch.collector.wal")

MAGIC = b"TWWAL\x00\x01\n"
HEADER = struct.Struct(">IQB")  # payload length, sequence number, kind
NONCE_BYTES = 12
TAG_BYTES = 16
FRAME_OVERHEAD = HEADER.size + NONCE_BYTES + TAG_BYTES
SEGMENT_SUFFIX = ".wal"


class Kind(IntEnum):
    """What a frame holds: one accepted request (by signal and encoding) or a done mark."""

    TRACES_PROTOBUF = 1
    TRACES_JSON = 2
    LOGS_PROTOBUF = 3
    LOGS_JSON = 4
    DONE = 16


class WalLocked(Exception):
    """Another process owns the write-ahead log directory."""


class WalFull(Exception):
    """The log is at `wal.max_bytes`: the request is refused (503, Retry-After)."""


class WalWriteFailed(Exception):
    """The disk refused a write or an fsync; nothing the request brought may be acknowledged."""


@dataclass(slots=True)
class Segment:
    number: int
    path: Path
    size: int = 0
    first_seq: int = 0
    last_seq: int = 0

    def holds(self, seq: int) -> bool:
        return self.first_seq <= seq <= self.last_seq


@dataclass(frozen=True, slots=True)
class Frame:
    seq: int
    kind: Kind
    payload: bytes


class SegmentLog:
    def __init__(
        self, directory: Path, key: bytes, segment_bytes: int, max_bytes: int, sync: bool
    ) -> None:
        self.directory = directory
        self.segment_bytes = segment_bytes
        self.max_bytes = max_bytes
        self.sync_enabled = sync
        self.corrupt_frames = 0
        self._aead = AESGCM(key)
        lock = own_directory(directory)
        if lock is None:
            raise WalLocked(str(directory))
        self._lock = lock
        self.segments = [self._recover(path) for path in self._segment_paths()]
        self._size = sum(segment.size for segment in self.segments)
        self._next_seq = 1 + max((s.last_seq for s in self.segments), default=0)
        self._unsynced: list[int] = []  # sealed descriptors an fsync still has to cover
        self._sync_directory = False
        self._handoff = threading.Lock()
        self.replayable = list(self.segments)
        self._fd = -1
        self._open_segment(1 + max((s.number for s in self.segments), default=0))

    @property
    def size_bytes(self) -> int:
        return self._size

    @property
    def active(self) -> Segment:
        return self.segments[-1]

    @property
    def last_seq(self) -> int:
        return self._next_seq - 1

    def _segment_paths(self) -> list[Path]:
        paths = [p for p in self.directory.glob(f"*{SEGMENT_SUFFIX}") if p.stem.isdigit()]
        return sorted(paths, key=lambda path: int(path.stem))

    def _recover(self, path: Path) -> Segment:
        """Read a left segment's frame headers (no decryption) and cut a torn tail off."""
        data = path.read_bytes()
        segment = Segment(int(path.stem), path, len(data))
        position = len(MAGIC) if data.startswith(MAGIC) else len(data)
        while position + HEADER.size <= len(data):
            length, seq, _kind = HEADER.unpack_from(data, position)
            end = position + HEADER.size + length
            if end > len(data) or length < NONCE_BYTES + TAG_BYTES:
                break
            segment.first_seq = segment.first_seq or seq
            segment.last_seq = seq
            position = end
        if position < len(data):
            log.warning(
                "write-ahead log segment ends in a torn frame; cut off",
                extra={"segment": segment.number, "at": position, "size": len(data)},
            )
            os.truncate(path, position)
            segment.size = position
        return segment

    def _open_segment(self, number: int) -> None:
        path = self.directory / f"{number:012d}{SEGMENT_SUFFIX}"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, FILE_MODE)
        try:
            os.fchmod(fd, 0o600)
            os.write(fd, MAGIC)
        except OSError:
            os.close(fd)
            path.unlink(missing_ok=True)
            raise
        self._seal_active()
        self._fd = fd
        self.segments.append(Segment(number, path, len(MAGIC)))
        self._size += len(MAGIC)
        self._sync_directory = True

    def _seal_active(self) -> None:
        if self._fd < 0:
            return
        if self.sync_enabled:
            with self._handoff:
                self._unsynced.append(self._fd)  # the committer closes it after its fsync
        else:
            os.close(self._fd)
        self._fd = -1

    def roll(self) -> None:
        """Seal the active segment and begin the next (so the sealed one can be trimmed)."""
        self._open_segment(self.active.number + 1)

    def append(self, kind: Kind, plaintext: bytes, bounded: bool = True) -> int:
        """Encrypt and write one frame; return its sequence number.

        `bounded` frames (requests) are refused at `max_bytes` with WalFull; done marks are not,
        since they are what lets the log shrink again."""
        seq = self._next_seq
        header = HEADER.pack(NONCE_BYTES + len(plaintext) + TAG_BYTES, seq, kind)
        frame_size = FRAME_OVERHEAD + len(plaintext)
        if bounded and self.size_bytes + frame_size > self.max_bytes:
            raise WalFull
        if self.active.size >= self.segment_bytes:
            try:
                self.roll()
            except OSError as exc:
                raise WalWriteFailed(exc.strerror or type(exc).__name__) from None
        nonce = os.urandom(NONCE_BYTES)
        self._write(header + nonce + self._aead.encrypt(nonce, plaintext, header))
        self._next_seq = seq + 1
        segment = self.active
        segment.size += frame_size
        self._size += frame_size
        segment.first_seq = segment.first_seq or seq
        segment.last_seq = seq
        return seq

    def _write(self, frame: bytes) -> None:
        start = self.active.size
        view = memoryview(frame)
        try:
            while view:
                view = view[os.write(self._fd, view) :]
        except OSError as exc:
            # Cut the partial frame off: recovery would stop at it and lose every later frame.
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, start)
            raise WalWriteFailed(exc.strerror or type(exc).__name__) from None

    def sync(self) -> None:
        """fsync every write so far (runs in a worker thread; the event loop keeps appending)."""
        with self._handoff:
            sealed, self._unsynced = self._unsynced, []
            directory, self._sync_directory = self._sync_directory, False
        try:
            for fd in [*sealed, self._fd]:
                if fd >= 0:
                    os.fsync(fd)
            if directory:
                dir_fd = os.open(self.directory, os.O_RDONLY)
                try:
                    os.fsync(dir_fd)
                finally:
                    os.close(dir_fd)
        except OSError as exc:
            raise WalWriteFailed(exc.strerror or type(exc).__name__) from None
        finally:
            for fd in sealed:
                with contextlib.suppress(OSError):
                    os.close(fd)

    def delete(self, segment: Segment) -> None:
        self.segments.remove(segment)
        self._size -= segment.size
        with contextlib.suppress(ValueError):
            self.replayable.remove(segment)
        segment.path.unlink(missing_ok=True)

    def frames(self, segment: Segment, kinds: frozenset[Kind]) -> Iterator[Frame]:
        """The frames of one segment left by an earlier run, decrypted if their kind is wanted;
        a frame that fails authentication ends the segment (counted in `corrupt_frames`)."""
        data = segment.path.read_bytes()
        position = len(MAGIC)
        while position + HEADER.size <= len(data):
            length, seq, kind = HEADER.unpack_from(data, position)
            start, end = position + HEADER.size, position + HEADER.size + length
            if end > len(data):
                return
            if kind in kinds:
                nonce = data[start : start + NONCE_BYTES]
                header = data[position:start]
                try:
                    payload = self._aead.decrypt(nonce, data[start + NONCE_BYTES : end], header)
                except InvalidTag:
                    self.corrupt_frames += 1
                    log.error(
                        "write-ahead log frame fails authentication; rest of segment skipped",
                        extra={"segment": segment.number, "seq": seq},
                    )
                    return
                yield Frame(seq, Kind(kind), payload)
            position = end

    def close(self) -> None:
        if self.sync_enabled:
            with contextlib.suppress(WalWriteFailed):
                self.sync()
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        self._lock.close()
