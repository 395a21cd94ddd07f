"""The deployment secret that keys pseudonyms, the analysis cache and every id turnwatch emits.

Every replica must use the same secret so the same value gets the same token everywhere. The
embedded default generates one on first start and keeps it under the data directory; production
mode refuses to start without one, because a per-replica secret would silently break referential
integrity across replicas and restarts.
"""

from __future__ import annotations

import hashlib
import os
import secrets
from pathlib import Path

from turnwatch.collector.deid.config import DeidConfig

from turnwatch.private import private_directory

SECRET_FILE_NAME = "deid.secret"
MIN_SECRET_BYTES = 16


def derived_key(secret: bytes, purpose: str) -> bytes:
    """A 32-byte key for one purpose: tokens, cache keys, ids, the quarantine and the write-ahead
    log never share a key, and none of them is the secret itself."""
    return hashlib.sha256(f"turnwatch.deid.{purpose}\x00".encode() + secret).digest()


def session_id_key(secret: bytes) -> bytes:
    """The key of `session_id_for`: the same in every replica that shares the secret."""
    return derived_key(secret, "session_id")


class SecretError(Exception):
    """No usable pseudonym secret; the message names the setting, never the secret."""


def load_secret(config: DeidConfig, mode: str, data_dir: Path) -> bytes:
    if config.secret is not None:
        return config.secret.get_secret_value().encode()
    if config.secret_file is not None:
        return _read(config.secret_file, "deid.secret_file")
    if mode == "production":
        raise SecretError(
            "deid.secret or deid.secret_file is required in production mode "
            "(every replica must share one pseudonym key)"
        )
    return _generated(data_dir / SECRET_FILE_NAME)


def _read(path: Path, setting: str) -> bytes:
    try:
        value = path.read_bytes().strip()
    except OSError as exc:
        raise SecretError(f"{setting}: cannot read {path}: {exc.strerror}") from None
    if len(value) < MIN_SECRET_BYTES:
        raise SecretError(f"{setting}: {path} must hold at least {MIN_SECRET_BYTES} bytes")
    return value


def _generated(path: Path) -> bytes:
    private_directory(path.parent)
    try:
        # O_EXCL: two processes starting together must not each write their own key.
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return _read(path, "generated secret")
    with os.fdopen(fd, "w") as handle:
        handle.write(secrets.token_hex(32))
    return _read(path, "generated secret")
