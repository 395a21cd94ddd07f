"""Secrets read from files (`*_file` settings), the way container platforms hand them over
(Kubernetes Secret volumes, compose secrets under /run/secrets), so a token never has to sit in
an environment variable or a compose file."""

from __future__ import annotations

from pathlib import Path

from pydantic import SecretStr


def read_secret_file(path: Path, setting: str) -> SecretStr:
    """The file's content, stripped; a ValueError naming the setting if it cannot be used."""
    try:
        value = path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        raise ValueError(f"{setting}: cannot read {path}: {reason}") from None
    if not value:
        raise ValueError(f"{setting}: {path} is empty")
    return SecretStr(value)


def token_from(token: SecretStr | None, path: Path | None, setting: str) -> SecretStr | None:
    if token is not None and path is not None:
        raise ValueError(f"set {setting} or {setting}_file, not both")
    return read_secret_file(path, f"{setting}_file") if path is not None else token
