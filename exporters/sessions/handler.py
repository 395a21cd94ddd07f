"""The exporter role's side of the session store: opening it, and the handler that fills it.

The store needs each session's transcript. The exporter reads `turnwatch.sessions` itself (its
own consumer group beside the scorer's) and the store joins a session and its score record by
(session_id, revision) in the database. The alternative, score records carrying the session,
would write every transcript to the broker a second time (a third for incidents) and push a
session near `bus.max_record_bytes` over it; reading the topic twice costs broker reads only.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from pathlib import Path

from turnwatch.exporters.sessions.config import SessionStoreConfig
from turnwatch.exporters.sessions.database import Database, PostgresDatabase, SqliteDatabase
from turnwatch.exporters.sessions.metrics import SessionStoreMetrics
from turnwatch.exporters.sessions.store import SessionStore

from turnwatch.bus.records import Output, Record
from turnwatch.incidents import Incident
from turnwatch.schema import Session
from turnwatch.scores import ScoreRecord


class StoreConfigError(ValueError):
    """The session store cannot be opened as configured; the message says which key to set."""


def sqlite_path(config: SessionStoreConfig, data_dir: Path) -> Path:
    return config.sqlite_path or data_dir / "sessions.db"


def postgres_dsn(config: SessionStoreConfig) -> str:
    if config.postgres_dsn_file is not None:
        try:
            return config.postgres_dsn_file.read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise StoreConfigError(
                f"session_store.postgres_dsn_file: cannot read it ({exc.strerror})"
            ) from None
    dsn = os.environ.get(config.postgres_dsn_env, "").strip()
    if not dsn:
        raise StoreConfigError(
            f"session_store.backend postgres needs a connection string in "
            f"${config.postgres_dsn_env} or session_store.postgres_dsn_file"
        )
    return dsn


def open_database(config: SessionStoreConfig, data_dir: Path) -> Database:
    if config.backend == "postgres":
        return PostgresDatabase(postgres_dsn(config))
    return SqliteDatabase(sqlite_path(config, data_dir))


def open_store(
    config: SessionStoreConfig, data_dir: Path, metrics: SessionStoreMetrics | None = None
) -> SessionStore:
    return SessionStore(open_database(config, data_dir), config.retention, metrics)


class SessionStoreHandler:
    """Sessions, score records and incidents into the store; publishes nothing."""

    def __init__(self, store: SessionStore) -> None:
        self.store = store

    async def __call__(self, topic: str, record: Record) -> Sequence[Output]:
        # Database writes block: keep them off the event loop the consumers share.
        if isinstance(record, Session):
            await asyncio.to_thread(self.store.put_session, record)
        elif isinstance(record, ScoreRecord):
            await asyncio.to_thread(self.store.put_score, record)
        elif isinstance(record, Incident):
            await asyncio.to_thread(self.store.put_incident, record)
        return ()
