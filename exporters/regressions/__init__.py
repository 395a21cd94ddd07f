"""The regression loop: flagged production sessions become versioned, replayable test cases.

```
Session + ScoreRecord --flagging.py--> reasons (scorer role; the incident carries the session)
  --handler.py (exporter role, turnwatch.incidents)--> case.py (dataset-schema case, validated by
  schema.py against regression-case.schema.json) --> store.py (one file per failure signature,
  occurrence count, bounded retention)
  --> api.py (/api/incidents), cli.py (list, show, export.py formats, replay.py)
```
"""
