"""Configuration of the session store (`session_store:`) and of calibration (`calibration:`)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field

from turnwatch.section import Section


class RetentionConfig(Section):
    """Bounds on the sessions kept; the oldest go first. Reviewed sessions are kept past them:
    they are the reference set calibration compares turnwatch with."""

    max_age_days: float = Field(default=30.0, gt=0, description="Older sessions are deleted.")
    max_sessions: int = Field(default=100_000, gt=0, description="Session revisions kept.")
    max_bytes: int = Field(
        default=2 * 1024**3, gt=0, description="Stored bytes (compressed records) kept."
    )


class ReviewQueueConfig(Section):
    unflagged_per_group: int = Field(
        default=5,
        ge=0,
        description="Unflagged sessions sampled per (service, slice) group after the flagged ones.",
    )


class SessionStoreConfig(Section):
    enabled: bool = Field(default=True, description="Keep scored sessions for review.")
    backend: Literal["sqlite", "postgres"] = "sqlite"
    sqlite_path: Path | None = Field(
        default=None, description="SQLite file; default `<data_dir>/sessions.db`."
    )
    postgres_dsn_env: str = Field(
        default="TURNWATCH_SESSION_STORE_DSN",
        description="Environment variable holding the PostgreSQL connection string.",
    )
    postgres_dsn_file: Path | None = Field(
        default=None, description="File holding the connection string (wins over the variable)."
    )
    retention: RetentionConfig = Field(default_factory=RetentionConfig)
    review_queue: ReviewQueueConfig = Field(default_factory=ReviewQueueConfig)
    curated_dataset: str = Field(
        default="curated-regressions",
        min_length=1,
        description="Name of the curated regression dataset; promotions bump its version.",
    )


class CalibrationConfig(Section):
    min_agreement: dict[str, float] = Field(
        default_factory=dict,
        description="metric: minimum Cohen's kappa; `turnwatch calibrate` exits 1 below it.",
    )
    thresholds: dict[str, float] = Field(
        default_factory=dict,
        description="metric: value below which turnwatch's score counts as a failure "
        "(default 1.0: any imperfection).",
    )
    bootstrap_samples: int = Field(default=1000, ge=100, le=100_000)
    seed: int = Field(default=0, description="Bootstrap seed, so figures are reproducible.")
