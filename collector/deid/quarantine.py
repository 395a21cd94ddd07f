"""Optional local quarantine: sessions that failed de-identification, encrypted at rest.

Off by default. When on, an operator can inspect why a session failed (with the deid secret) while
the raw text never leaves the machine unencrypted. Bounded by a file count; past it sessions are
only dropped and counted.
"""

from __future__ import annotations

import base64
import os
from pathlib import Path

from cryptography.fernet import Fernet
from turnwatch.collector.deid.secret import derived_key

from turnwatch.private import private_directory
from turnwatch.schema import Session


def quarantine_key(secret: bytes) -> bytes:
    return base64.urlsafe_b64encode(derived_key(secret, "quarantine"))


class QuarantineStore:
    def __init__(self, directory: Path, secret: bytes, max_files: int) -> None:
        self.directory = directory
        self.max_files = max_files
        self._fernet = Fernet(quarantine_key(secret))
        private_directory(directory)
        self._count = sum(1 for _ in directory.glob("*.session"))

    def keep(self, session: Session, reason: str) -> bool:
        """Store the session encrypted; False when the quarantine is full."""
        if self._count >= self.max_files:
            return False
        name = f"{session.session_id}-r{session.revision}-{reason}.session"
        data = self._fernet.encrypt(session.model_dump_json().encode())
        fd = os.open(self.directory / name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        self._count += 1
        return True

    def read(self, path: Path) -> Session:
        return Session.model_validate_json(self._fernet.decrypt(path.read_bytes()))
