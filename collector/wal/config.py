"""The write-ahead log's configuration block (`wal:` in the YAML file)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator

from turnwatch.section import Section

MiB = 1024 * 1024

FsyncPolicy = Literal["always", "batch", "never"]


class WalConfig(Section):
    enabled: bool = Field(
        default=False,
        description="Write every accepted OTLP request to an encrypted log on disk before "
        "answering 200, replay it on start, trim it once the sessions are on the bus.",
    )
    directory: Path | None = Field(default=None, description="Default `<data_dir>/wal`.")
    max_bytes: int = Field(
        default=1024 * MiB,
        gt=0,
        description="Bound on the log's size on disk; past it OTLP answers 503 with Retry-After.",
    )
    segment_bytes: int = Field(
        default=16 * MiB,
        gt=0,
        description="Size at which a segment file is closed and the next begun; the log is "
        "trimmed a whole segment at a time.",
    )
    fsync: FsyncPolicy = Field(
        default="batch",
        description="`always`: each request waits for an fsync that began after its write; "
        "`batch`: one fsync every `group_commit_ms` covers every request written since the last; "
        "`never`: the write reaches the operating system before the 200 (survives a killed "
        "process, not a power cut).",
    )
    group_commit_ms: float = Field(
        default=5.0, gt=0, le=1000, description="The `batch` policy's interval between fsyncs."
    )
    high_watermark: float = Field(
        default=0.8,
        gt=0,
        le=1,
        description="Fill at which open sessions holding the oldest segment are closed early "
        "(reason `evicted`) so the segment can be trimmed.",
    )

    @model_validator(mode="after")
    def _segments_fit(self) -> WalConfig:
        if self.segment_bytes * 2 > self.max_bytes:
            raise ValueError("max_bytes must hold at least two segments (2 * segment_bytes)")
        return self
