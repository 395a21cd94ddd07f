"""The write-ahead log: durable acceptance of OTLP requests (`wal:` settings).

`segments.py` (encrypted, framed segment files), `commit.py` (the fsync policy and group commit),
`requests.py` (what a logged request is and how replay decodes it), `sources.py` (which frames a
session holds), `durability.py` (claims, done marks, trimming and replay, as the collector uses
them), `metrics.py`, `config.py`.
"""
