"""The data plane: the mirror engine, one PySpark application for every cluster link, whose
long-running copier slots read the source partitions with confluent-kafka and write each record
to the same partition of its mirror (docs/mirror-engine.md).

Nothing here imports Django; the engine receives each link's spec and talks to the console
through Redis.
"""
