"""Files that hold conversations or keys (spool, write-ahead log, quarantine, pseudonym key,
regression cases) are owner-only: 0600 files in 0700 directories, whatever the process umask."""

from __future__ import annotations

import os
from pathlib import Path

FILE_MODE = 0o600
DIRECTORY_MODE = 0o700


def private_directory(path: Path) -> Path:
    """Create `path` (and missing parents) owner-only; tighten it if it exists."""
    missing = [parent for parent in (path, *path.parents) if not parent.exists()]
    for directory in reversed(missing):
        directory.mkdir(mode=DIRECTORY_MODE, exist_ok=True)
        os.chmod(directory, DIRECTORY_MODE)
    if path.stat().st_mode & 0o777 != DIRECTORY_MODE:
        os.chmod(path, DIRECTORY_MODE)
    return path


def private_opener(path: str, flags: int) -> int:
    """`open(..., opener=private_opener)`: a new file is created 0600."""
    return os.open(path, flags, FILE_MODE)
