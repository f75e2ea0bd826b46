"""The engine's client of Redis, shared by a runner thread for each link, serves more threads at
once than it has connections: they wait for one instead of failing."""

from __future__ import annotations

import threading

import pytest
import redis

from spark_jobs import control
from tests.conftest import TEST_REDIS_URL

pytestmark = [pytest.mark.integration]


def test_more_threads_than_connections_each_get_their_answer():
    client = control.client(TEST_REDIS_URL, 2)
    failures: list[Exception] = []

    def ask() -> None:
        try:  # holds its connection 0.2 s: the threads overlap
            client.blpop(["isthmus-test-nothing-here"], timeout=0.2)
        except redis.RedisError as exc:
            failures.append(exc)

    # More than redis-py's own pool allows at once (100): 200 links' runners report together.
    threads = [threading.Thread(target=ask) for _ in range(150)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    assert len(client.connection_pool._connections) <= control.CONNECTIONS
    client.close()
