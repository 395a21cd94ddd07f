"""The bus between turnwatch's stages: Kafka, or an embedded in-process queue.

`base.py` is the interface (publish; consume in a group, acknowledge after processing),
`embedded.py` and `kafka.py` the backends (`kafka_consumer.py` the Kafka consuming side),
`spool.py` the on-disk FIFO both use, `records.py` the topics and record encoding. What each role
attaches to the bus is the application's business (`turnwatch/app/roles.py`).
"""
