"""turnwatch: a monitoring sidecar for production chatbots.

The public surface, for plug-ins (`bus.scorer_processor`, `bus.exporter_handler`) and for code
that reads turnwatch's records, is the names in `__all__`, importable from `turnwatch` itself:

- the records on the bus topics: `Session` (`turnwatch.sessions`), `ScoreRecord`
  (`turnwatch.scores`), `Incident` (`turnwatch.incidents`), `DeadLetter` (`turnwatch.deadletter`),
  and the parts of a score record (`Finding`, `Evidence`, `Score`, `CheckResult`);
- the topic names and `Output(topic, key, record)`, what a plug-in returns to publish;
- the plug-in signatures: `SessionProcessor` (`async (Session) -> [Output]`) and
  `RecordHandler` (`async (topic, ScoreRecord | Incident) -> [Output]`).

Everything else is internal and may change between releases. The names load on first use, so
importing one module of turnwatch (the collector's hot path, say) does not load them all.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_PUBLIC = {
    "Session": "turnwatch.schema",
    "ScoreRecord": "turnwatch.scores",
    "Finding": "turnwatch.scores",
    "Evidence": "turnwatch.scores",
    "Score": "turnwatch.scores",
    "CheckResult": "turnwatch.scores",
    "Incident": "turnwatch.incidents",
    "DeadLetter": "turnwatch.bus.records",
    "Output": "turnwatch.bus.records",
    "SESSIONS": "turnwatch.bus.records",
    "SCORES": "turnwatch.bus.records",
    "INCIDENTS": "turnwatch.bus.records",
    "DEAD_LETTER": "turnwatch.bus.records",
    "SessionProcessor": "turnwatch.bus.plugins",
    "RecordHandler": "turnwatch.bus.plugins",
}
__all__ = ["__version__", *_PUBLIC]


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'turnwatch' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
