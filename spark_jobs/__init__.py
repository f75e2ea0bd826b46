"""The data plane: one PySpark Structured Streaming application per cluster link.

Nothing here imports Django; a stream receives a small link spec and talks to the console
through Redis.
"""
