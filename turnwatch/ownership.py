"""One process per state directory (the spool's, the write-ahead log's): two writers would
interleave their records, so the directory's `lock` file is held with an exclusive flock for as
long as the owner runs. The kernel drops the lock when the process dies, however it dies."""

from __future__ import annotations

import fcntl
from pathlib import Path
from typing import BinaryIO


def own_directory(directory: Path) -> BinaryIO | None:
    """The directory's lock file, locked and kept open; None when another process holds it."""
    lock = open(directory / "lock", "a+b")  # noqa: SIM115 - held for the owner's life
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        lock.close()
        return None
    return lock
