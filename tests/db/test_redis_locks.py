"""The locks every process shares, on a real Redis (replication/core/redis_channel.py): a holder
keeps its lock for as long as its work runs, however long past the lock's timeout, and one
that dies (a worker killed with its host) lets go within HOLDER_GONE_S, not after the longest
the work may take; one that hangs lets go after that longest."""

from __future__ import annotations

import os
import time
import uuid

import pytest

from replication.core import redis_channel
from replication.core.errors import ReplicationError

pytestmark = pytest.mark.usefixtures("light_stack")

# HOLDER_GONE_S here, so that the tests take seconds; not less: the keeper renews every third
# of it, and the fast tier runs at the lowest priority beside the Kafka tier, where a thread can
# wait a second for the CPU (0.6 s here once let a kept lock expire).
GONE_S = 2.0


@pytest.fixture
def name(monkeypatch) -> str:
    monkeypatch.setattr(redis_channel, "HOLDER_GONE_S", GONE_S)
    return f"test-lock-{uuid.uuid4().hex}"


def _free(name: str) -> bool:
    with redis_channel.held(name, 120) as taken:
        return taken


def test_a_holder_keeps_its_lock_while_its_work_runs_past_the_timeout(name):
    with redis_channel.held(name, 120) as taken:
        assert taken
        for _ in range(3):
            time.sleep(GONE_S)
            assert not _free(name)
    assert _free(name)


def test_a_holder_that_died_lets_go_within_seconds(name):
    ready, told = os.pipe()
    child = os.fork()
    if child == 0:  # the holder, killed while it works: no `finally` of its runs
        with redis_channel.held(name, 120):
            os.write(told, b"x")
            time.sleep(60)
        os._exit(1)
    try:
        os.read(ready, 1)
        assert not _free(name)
        os.kill(child, 9)
        os.waitpid(child, 0)
        killed = time.monotonic()

        with redis_channel.held(name, 120, wait=30) as taken:
            waited = time.monotonic() - killed
    finally:
        os.close(ready), os.close(told)

    assert taken
    # Seconds, not the 120 s its work may take: a starved fast tier once took 3.04 s.
    assert waited < GONE_S + 5


def test_a_hung_holder_lets_go_after_the_longest_its_work_may_take(name):
    with redis_channel.held(name, 2 * GONE_S) as taken:
        assert taken
        time.sleep(GONE_S)
        assert not _free(name)
        time.sleep(2 * GONE_S)
        assert _free(name)


def test_one_request_at_a_time_is_kept_past_the_timeout_too(name):
    with redis_channel.only_one(name, "busy"):
        time.sleep(2 * GONE_S)
        with pytest.raises(ReplicationError, match="busy"), redis_channel.only_one(name, "busy"):
            pass
