"""The `bus.exporter_handler` that benchmarks/detection.py configures: every score and incident
record the exporter role receives is appended, as one JSON line, to the file named by
TURNWATCH_DETECTION_RECORDS. It runs beside turnwatch's own exporters (metrics, regression cases,
the session store `benchmarks/calibration.py` reads back), not instead of them."""

from __future__ import annotations

import json
import os
from typing import Any

RECORDS_ENV = "TURNWATCH_DETECTION_RECORDS"


async def record(topic: str, payload: Any) -> list[Any]:
    body = payload.model_dump(mode="json") if hasattr(payload, "model_dump") else payload
    line = json.dumps({"topic": topic, "record": body}) + "\n"
    with open(os.environ[RECORDS_ENV], "a", encoding="utf-8") as handle:
        handle.write(line)
    return []
