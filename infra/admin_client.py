"""confluent-kafka's AdminClient, safe to drop on any thread.

An admin client answers its requests in Python on librdkafka's own background thread. When the
garbage collector runs there and frees an admin client that waited in a reference cycle (a
failed request's traceback is enough), the client is destroyed on its own thread, which
librdkafka answers by aborting the whole process ("rd_kafka_destroy() called from librdkafka
owned thread"); it cost `make test` an xdist worker at a time. This one, freed on a thread
Python did not start, is kept instead, and destroyed by the next Python thread that makes an
admin client or calls `destroy_kept`. Every admin client of the project is this one (ruff bans
the other).
"""

from __future__ import annotations

import threading
from collections import deque
from typing import Any

from confluent_kafka.admin import AdminClient as _LibrdkafkaAdmin  # noqa: TID251

_kept: deque[_LibrdkafkaAdmin] = deque()


def _on_foreign_thread() -> bool:
    # threading calls a thread it did not start a dummy one: here, librdkafka's.
    return isinstance(threading.current_thread(), threading._DummyThread)


class AdminClient(_LibrdkafkaAdmin):
    def __init__(self, conf: dict[str, Any], **kwargs: Any) -> None:
        destroy_kept()
        super().__init__(conf, **kwargs)

    def __del__(self) -> None:
        if _on_foreign_thread():
            _kept.append(self)  # alive again, until a Python thread lets it go


def destroy_kept() -> None:
    """Destroy the admin clients freed on librdkafka's threads, here (a Python thread)."""
    if _on_foreign_thread():
        return
    while True:
        try:
            client = _kept.popleft()
        except IndexError:
            return
        client.__exit__(None, None, None)
        del client
