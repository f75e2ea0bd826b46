"""The data plane: one PySpark application per cluster link, whose long-running copy tasks read
the source partitions with confluent-kafka and write each record to the same partition of its
mirror (docs/mirror-engine.md).

Nothing here imports Django; a stream receives a small link spec and talks to the console
through Redis.
"""
