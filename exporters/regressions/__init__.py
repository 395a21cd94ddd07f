"""The regression loop: flagged production sessions become versioned, replayable test cases.

```
Incident (turnwatch.incidents: session + ScoreRecord + flag reasons, from scorers/flagging.py)
  --handler.py (exporter role)--> case.py builds a model.Case (validated by schema.py against
  regression-case.schema.json, generated from the model) --> store.py (one file per failure
  signature, occurrence count, bounded retention)
  --> api.py (/api/incidents), turnwatch/app/regressions.py (list, show, export.py formats,
      replay.py)
```
"""
