"""One process per state directory (the spool's, the write-ahead log's): two writers would
interleave their records, so the directory's `lock` file is held with an exclusive flock for as
long as the owner runs. The kernel drops the lock when the process dies, however it dies.
A directory several processes write in turn (regression cases on a volume that every exporter
replica mounts) is locked the same way, but only around each read-modify-write (`locked`).

Both directories hold conversation content, so they are private (`turnwatch.private`): created
or tightened to 0700, the lock file 0600."""

from __future__ import annotations

import contextlib
import fcntl
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from turnwatch.private import private_directory, private_opener


def own_directory(directory: Path) -> BinaryIO | None:
    """The private directory's lock file, locked and kept open; None when another process
    holds it."""
    private_directory(directory)
    lock = open(directory / "lock", "a+b", opener=private_opener)  # noqa: SIM115 - held for the owner's life
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        lock.close()
        return None
    return lock


@contextlib.contextmanager
def locked(directory: Path) -> Iterator[None]:
    """The private directory's `.lock` file (hidden: users list these directories), waited for
    and held for the block."""
    private_directory(directory)
    with open(directory / ".lock", "a+b", opener=private_opener) as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield
