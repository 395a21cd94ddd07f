"""The exporter role's side of the loop: incidents from `turnwatch.incidents` into the store.

An `Incident` (score record, de-identified session, flag reasons) arrives validated by the bus: a
record that does not validate is dead-lettered before it gets here.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from turnwatch.exporters.regressions.store import CaseStore

from turnwatch.bus.plugins import RecordHandler
from turnwatch.bus.records import ExporterRecord, Output
from turnwatch.incidents import Incident


class IncidentHandler:
    """`RecordHandler` for the exporter role: writes regression cases, publishes nothing."""

    def __init__(self, store: CaseStore) -> None:
        self.store = store

    async def __call__(self, topic: str, record: ExporterRecord) -> Sequence[Output]:
        if isinstance(record, Incident):
            # File writes block; keep them off the event loop the bus consumers share.
            await asyncio.to_thread(self.store.record, record)
        return ()


def chain(*handlers: RecordHandler) -> RecordHandler:
    """One exporter handler from several (score metrics + regression cases), in order."""

    async def handle(topic: str, record: ExporterRecord) -> Sequence[Output]:
        outputs: list[Output] = []
        for handler in handlers:
            outputs.extend(await handler(topic, record))
        return outputs

    return handle
