"""An exporter plug-in for the handover tests: it holds the first score record whose session id
starts with `hold-` after turnwatch's exporters counted it, as a slow step after counting would,
so the member keeps that record in hand (its offset and its batch's uncommitted) until a release
file appears, or forever. The marker file says which record it holds."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from turnwatch.bus.records import ExporterRecord, Output
from turnwatch.scores import ScoreRecord

HOLD_MARKER = "TURNWATCH_TEST_HOLD_MARKER"
HOLD_RELEASE = "TURNWATCH_TEST_HOLD_RELEASE"
HOLD_PREFIX = "hold-"


async def hold(topic: str, record: ExporterRecord) -> list[Output]:
    if not (isinstance(record, ScoreRecord) and record.session_id.startswith(HOLD_PREFIX)):
        return []
    marker = Path(os.environ[HOLD_MARKER])
    if marker.exists():
        return []  # one record held, the rest pass
    marker.write_text(record.session_id, encoding="utf-8")
    release = Path(os.environ[HOLD_RELEASE])
    while not release.exists():
        await asyncio.sleep(0.05)
    return []
