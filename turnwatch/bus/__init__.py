"""The bus between turnwatch's stages: Kafka, or an embedded in-process queue.

`base.py` is the interface (publish; consume in a group, acknowledge after processing),
`embedded.py` and `kafka.py` the backends, `spool.py` the on-disk FIFO both use, `records.py`
the topics and record encoding, `roles.py` what the collector, scorer and exporter attach.
"""
