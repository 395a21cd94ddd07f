"""A throwaway PostgreSQL server for tests: Debian's `postgresql` binaries, `initdb` into a
temporary directory, `pg_ctl` on a free loopback port, trust authentication, stopped afterwards.

As root (CI, the development machines) the server runs as the `postgres` user, which initdb
requires; as anyone else it runs as that user. `.ci/run` installs the package.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path


def _bin_dir() -> Path:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not found:
        raise RuntimeError("PostgreSQL is not installed: apt-get install -y postgresql")
    return Path(found[-1]).parent


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


FAST_STOP = ("-m", "fast", "stop")


class PostgresServer:
    def __init__(self) -> None:
        self.bin = _bin_dir()
        self.port = _free_port()
        self.root = Path(tempfile.mkdtemp(prefix="turnwatch-pg-"))
        self.data = self.root / "data"
        self.as_user: list[str] = []
        if os.geteuid() == 0:
            account = pwd.getpwnam("postgres")
            os.chown(self.root, account.pw_uid, account.pw_gid)
            self.as_user = ["runuser", "-u", "postgres", "--"]

    @property
    def dsn(self) -> str:
        return f"host=127.0.0.1 port={self.port} user=postgres dbname=postgres"

    def _run(self, *command: str) -> None:
        subprocess.run(
            [*self.as_user, *command], check=True, capture_output=True, timeout=120, cwd=self.root
        )

    def start(self) -> None:
        self._run(
            str(self.bin / "initdb"), "-D", str(self.data), "-U", "postgres",
            "--auth=trust", "--no-sync", "-E", "UTF8",
        )  # fmt: skip
        self.resume()

    def resume(self) -> None:
        """Start the server on its data directory (again, after `pause`), on the same port."""
        options = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off"
        self._run(
            str(self.bin / "pg_ctl"), "-D", str(self.data), "-o", options,
            "-l", str(self.root / "server.log"), "-w", "-t", "60", "start",
        )  # fmt: skip

    def pause(self) -> None:
        """Stop the server (closing every connection) and keep its data for `resume`."""
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-w", *FAST_STOP)

    def stop(self) -> None:
        try:
            # Not checked: a server left paused by a failed test is already stopped.
            subprocess.run(
                [*self.as_user, str(self.bin / "pg_ctl"), "-D", str(self.data), *FAST_STOP],
                capture_output=True,
                timeout=120,
                cwd=self.root,
            )
        finally:
            shutil.rmtree(self.root, ignore_errors=True)
