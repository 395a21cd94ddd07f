"""The two databases behind the session store: SQLite (embedded default) and PostgreSQL (shared).

Both speak the same SQL (upserts with ON CONFLICT, EXISTS filters); statements are written with
`:name` parameters, which SQLite takes as they are and PostgreSQL receives as `%(name)s`. One
connection per store, used under a lock: the exporter writes from one thread at a time and the
web view's reads are short. Records are stored zlib-compressed (`BLOB` / `BYTEA`).

The schema grows by additions only (`IF NOT EXISTS` tables and indexes, run on every open), so
a store written by an older turnwatch opens as it is and gains what it lacks.
"""

from __future__ import annotations

import os
import re
import sqlite3
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol

Row = tuple[Any, ...]
Params = Mapping[str, Any]

SCHEMA = """
-- Revisions are the close time in ms times 1024 (about 1.8e15): 64-bit columns.
CREATE TABLE IF NOT EXISTS sessions (
    session_id TEXT NOT NULL,
    revision BIGINT NOT NULL,
    service TEXT NOT NULL,
    service_version TEXT,
    stored_at {real} NOT NULL,
    ended_at {real},
    turns INTEGER,
    session_blob {blob},
    score_blob {blob},
    scored_at {real},
    joint_success INTEGER,
    critical INTEGER NOT NULL DEFAULT 0,
    flagged INTEGER NOT NULL DEFAULT 0,
    reasons TEXT NOT NULL DEFAULT '',
    reviewed INTEGER NOT NULL DEFAULT 0,
    bytes INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (session_id, revision)
);
CREATE INDEX IF NOT EXISTS sessions_by_time ON sessions (ended_at);
CREATE INDEX IF NOT EXISTS sessions_by_stored ON sessions (reviewed, stored_at);
-- The online canary's shared windows: a service's versions, the latest scored first.
CREATE INDEX IF NOT EXISTS sessions_by_version ON sessions (service, service_version, scored_at);
CREATE TABLE IF NOT EXISTS session_tags (
    session_id TEXT NOT NULL,
    revision BIGINT NOT NULL,
    kind TEXT NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY (session_id, revision, kind, value)
);
CREATE INDEX IF NOT EXISTS tags_by_value ON session_tags (kind, value);
-- Added with resource attributes on sessions: a store from before gains it empty on open, which
-- loses nothing: sessions stored before were built by collectors that kept no attributes.
CREATE TABLE IF NOT EXISTS session_attributes (
    session_id TEXT NOT NULL,
    revision BIGINT NOT NULL,
    name TEXT NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY (session_id, revision, name)
);
CREATE INDEX IF NOT EXISTS attributes_by_value ON session_attributes (name, value);
CREATE TABLE IF NOT EXISTS judge_scores (
    session_id TEXT NOT NULL,
    revision BIGINT NOT NULL,
    judge TEXT NOT NULL,
    metric TEXT NOT NULL,
    value {real},
    turns TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (session_id, revision, judge, metric)
);
CREATE TABLE IF NOT EXISTS reviews (
    session_id TEXT NOT NULL,
    revision BIGINT NOT NULL,
    reviewer TEXT NOT NULL,
    reviewed_at {real} NOT NULL,
    review_blob {blob} NOT NULL,
    PRIMARY KEY (session_id, revision, reviewer)
);
-- Which score record parts the exporter members counted (claims.py): the shared arbiter that
-- lets exactly one member count a redelivered record.
CREATE TABLE IF NOT EXISTS counted_parts (
    session_id TEXT NOT NULL,
    revision BIGINT NOT NULL,
    part TEXT NOT NULL,
    attempt TEXT NOT NULL,
    counted_at {real} NOT NULL,
    PRIMARY KEY (session_id, revision, part)
);
CREATE INDEX IF NOT EXISTS counted_parts_by_time ON counted_parts (counted_at);
-- Which score record parts' evaluation events were sent and accepted (claims.py, SentMarks): a
-- member that takes a redelivered record over sends only the parts not marked here.
CREATE TABLE IF NOT EXISTS sent_events (
    session_id TEXT NOT NULL,
    revision BIGINT NOT NULL,
    part TEXT NOT NULL,
    sent_at {real} NOT NULL,
    PRIMARY KEY (session_id, revision, part)
);
CREATE INDEX IF NOT EXISTS sent_events_by_time ON sent_events (sent_at);
CREATE TABLE IF NOT EXISTS curated_dataset (
    name TEXT PRIMARY KEY,
    version INTEGER NOT NULL
);
"""


class Database(Protocol):
    """What the store needs from a database; every call is one transaction unless inside
    `transaction()`."""

    def execute(self, sql: str, params: Params | None = None) -> list[Row]: ...
    def executemany(self, sql: str, rows: Sequence[Params]) -> None: ...
    def transaction(self) -> Any: ...
    def close(self) -> None: ...


class SqliteDatabase:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fresh = not path.exists()
        self._connection = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        if fresh:
            # De-identified production conversations: owner-only, like the case files.
            os.chmod(path, 0o600)
        self._lock = threading.RLock()
        self._depth = 0
        self._connection.execute("PRAGMA journal_mode=WAL")
        self._connection.execute("PRAGMA synchronous=NORMAL")
        # One transaction: the schema is created whole or not at all, and SQLite's log holds
        # each page once (statement by statement it rewrote the schema page every time: half
        # as much again to write, which a nearly full disk may not have).
        self._connection.executescript(f"BEGIN;{SCHEMA.format(real='REAL', blob='BLOB')}COMMIT;")

    def execute(self, sql: str, params: Params | None = None) -> list[Row]:
        with self._lock:
            return self._connection.execute(sql, params or {}).fetchall()

    def executemany(self, sql: str, rows: Sequence[Params]) -> None:
        with self._lock:
            self._connection.executemany(sql, rows)

    @contextmanager
    def transaction(self) -> Iterator[None]:
        with self._lock:
            outermost = self._depth == 0
            if outermost:
                self._connection.execute("BEGIN IMMEDIATE")
            self._depth += 1
            try:
                yield
            except BaseException:
                self._depth -= 1
                if outermost:
                    self._connection.execute("ROLLBACK")
                raise
            self._depth -= 1
            if outermost:
                self._connection.execute("COMMIT")

    def close(self) -> None:
        with self._lock:
            self._connection.close()


_NAMED = re.compile(r"(?<!:):([a-z_][a-z0-9_]*)")


def to_pyformat(sql: str) -> str:
    """`:name` parameters as psycopg's `%(name)s` (no `%` or `::` appears in the store's SQL)."""
    return _NAMED.sub(r"%(\1)s", sql)


class PostgresDatabase:
    """psycopg 3 (the `postgres` extra). Reconnects once when the server dropped the connection."""

    def __init__(self, dsn: str) -> None:
        try:
            import psycopg
        except ImportError as exc:
            raise RuntimeError(
                "session_store.backend postgres needs psycopg: pip install 'turnwatch[postgres]'"
            ) from exc
        self._psycopg = psycopg
        self._dsn = dsn
        self._lock = threading.RLock()
        self._depth = 0
        self._connection = psycopg.connect(dsn, autocommit=True)
        # Several exporters may start at once: the advisory lock serialises the DDL.
        with self._connection.transaction():
            self._connection.execute("SELECT pg_advisory_xact_lock(7212021)")
            for statement in SCHEMA.format(real="DOUBLE PRECISION", blob="BYTEA").split(";"):
                if statement.strip():
                    self._connection.execute(statement)

    def _reconnect_if_closed(self) -> None:
        if self._connection.closed and self._depth == 0:
            self._connection = self._psycopg.connect(self._dsn, autocommit=True)

    def execute(self, sql: str, params: Params | None = None) -> list[Row]:
        with self._lock:
            self._reconnect_if_closed()
            cursor = self._connection.execute(to_pyformat(sql), params or {})
            rows = cursor.fetchall() if cursor.description else []
            return [tuple(bytes(v) if isinstance(v, memoryview) else v for v in r) for r in rows]

    def executemany(self, sql: str, rows: Sequence[Params]) -> None:
        with self._lock:
            self._reconnect_if_closed()
            with self._connection.cursor() as cursor:
                cursor.executemany(to_pyformat(sql), rows)

    @contextmanager
    def transaction(self) -> Iterator[None]:
        with self._lock:
            self._reconnect_if_closed()
            self._depth += 1
            try:
                with self._connection.transaction():
                    yield
            finally:
                self._depth -= 1

    def close(self) -> None:
        with self._lock:
            self._connection.close()
