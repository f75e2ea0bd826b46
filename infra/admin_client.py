"""confluent-kafka's AdminClient, safe to drop on any thread and to give up on.

An admin client answers its requests in Python on librdkafka's own background thread. When the
garbage collector runs there and frees an admin client that waited in a reference cycle (a
failed request's traceback is enough), the client is destroyed on its own thread, which
librdkafka answers by aborting the whole process ("rd_kafka_destroy() called from librdkafka
owned thread"); it cost `make test` an xdist worker at a time. This one, freed on a thread
Python did not start, is kept instead, and destroyed by the next Python thread that makes an
admin client or calls `destroy_kept`. Every admin client of the project is this one (ruff bans
the other).

Its consumer group requests (those sent to the group's coordinator) never time out inside
librdkafka either: a request timing out there just as its coordinator is found aborts the
whole process too (librdkafka#4605, open: "rd_kafka_enq_once_del_source_return: Assertion
`eonce->refcnt > 0' failed"; short timeouts under load reproduce it within a second, and it
cost `make test` a worker in about half its runs). Their callers give up by waiting on the
future for as long as they choose, and then drop the client.
"""

from __future__ import annotations

import threading
from collections import deque
from concurrent.futures import Future
from typing import Any

from confluent_kafka.admin import AdminClient as _LibrdkafkaAdmin  # noqa: TID251

_kept: deque[_LibrdkafkaAdmin] = deque()
# librdkafka's timeout of a consumer group request: longer than anyone waits for one.
COORDINATOR_REQUEST_S = 600.0


def _on_foreign_thread() -> bool:
    # threading calls a thread it did not start a dummy one: here, librdkafka's.
    return isinstance(threading.current_thread(), threading._DummyThread)


class AdminClient(_LibrdkafkaAdmin):
    def __init__(self, conf: dict[str, Any], **kwargs: Any) -> None:
        destroy_kept()
        super().__init__(conf, **kwargs)

    # The requests sent to a group's coordinator, with librdkafka's timeout out of reach (the
    # overrides' signatures are Kafka's own wrapper's, which differ from its stubs').

    def describe_consumer_groups(  # type: ignore[override]
        self, group_ids: list[str], **kwargs: Any
    ) -> dict[str, Future[Any]]:
        return super().describe_consumer_groups(group_ids, **_no_timeout(kwargs))

    def list_consumer_group_offsets(  # type: ignore[override]
        self, list_consumer_group_offsets_request: list[Any], **kwargs: Any
    ) -> dict[str, Future[Any]]:
        return super().list_consumer_group_offsets(
            list_consumer_group_offsets_request, **_no_timeout(kwargs)
        )

    def alter_consumer_group_offsets(  # type: ignore[override]
        self, alter_consumer_group_offsets_request: list[Any], **kwargs: Any
    ) -> dict[str, Future[Any]]:
        return super().alter_consumer_group_offsets(
            alter_consumer_group_offsets_request, **_no_timeout(kwargs)
        )

    def delete_consumer_groups(  # type: ignore[override]
        self, group_ids: list[str], **kwargs: Any
    ) -> dict[str, Future[Any]]:
        return super().delete_consumer_groups(group_ids, **_no_timeout(kwargs))

    def __del__(self) -> None:
        if _on_foreign_thread():
            _kept.append(self)  # alive again, until a Python thread lets it go


def _no_timeout(kwargs: dict[str, Any]) -> dict[str, Any]:
    return {**kwargs, "request_timeout": COORDINATOR_REQUEST_S}


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
