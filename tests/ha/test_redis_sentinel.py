"""Redis with a replica and Sentinel (issue 45): the master killed with `kill -9`, the Sentinel
promotes the replica, and the console's client, the engine's and a real Celery worker carry on
through it, none told where the new master is; the old master, started again, becomes a replica
of the new one. On Redis servers of the test's own (`make test-ha`)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import redis
from celery import Celery
from django.test import override_settings

from devstack import kafka
from devstack.stack import Stack
from infra import processes, redis_connect
from replication.core import redis_channel
from spark_jobs import control

pytestmark = pytest.mark.ha

ROOT = Path(__file__).resolve().parents[2]
PARTS = ["redis", "redis-replica", "redis-sentinel"]
# The test's own master, apart from the stack's Redis (kafka.port(6380)) that other tests use.
MASTER_PORT = 6390
FAILOVER_S = 15  # the most a client may wait for the new master (measured: docs/deployment.md)


@pytest.fixture
def sentinel_stack(tmp_path):
    """A master, its replica and a Sentinel of the test's own (state in `tmp_path`)."""
    stack = Stack(tmp_path, redis_port=kafka.port(MASTER_PORT))
    stack.up(PARTS, echo=lambda _: None)
    try:
        yield stack
    finally:
        stack.down(PARTS, echo=lambda _: None)


def _role(port: int) -> dict:
    return redis.Redis(port=port, socket_timeout=1).info("replication")


def _worker(stack: Stack, sentinels: str, queue: str, log: Path) -> subprocess.Popen:
    """A real Celery worker of the console's, given only where the Sentinels are."""
    env = {
        **os.environ,
        "REDIS_URL": f"redis://127.0.0.1:{stack.redis_port}/0",
        "ISTHMUS_REDIS_SENTINELS": sentinels,
    }
    command = [sys.executable, "-m", "celery", "-A", "console", "worker", "--pool", "solo"]
    command += ["--loglevel", "INFO", "--queues", queue, "--hostname", f"{queue}@localhost"]
    with open(log, "ab") as out:
        return subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)


def _sender(url: str, sentinels: redis_connect.Sentinels) -> Celery:
    """A Celery app of the test's, set as console/settings.py sets the console's."""
    through = redis_connect.celery_url(url, sentinels)
    options = redis_connect.celery_options(sentinels, 2)
    return Celery(
        "ha-sender",
        broker=through,
        backend=through,
        broker_transport_options=options,
        result_backend_transport_options=options,
        task_publish_retry_policy=redis_connect.CELERY_PUBLISH_RETRY,
    )


def _run_task(app: Celery, queue: str, value: int, timeout: float) -> list:
    return app.send_task("celery.accumulate", args=[value], queue=queue).get(timeout=timeout)


def test_a_killed_master_is_replaced_and_every_client_follows(sentinel_stack, tmp_path):
    stack = sentinel_stack
    address = f"127.0.0.1:{stack.sentinel_port}"
    url = f"redis://127.0.0.1:{stack.redis_port}/0"
    sentinels = redis_connect.sentinels_from({"ISTHMUS_REDIS_SENTINELS": address}, "", url)
    assert sentinels is not None
    queue = f"ha-{uuid.uuid4().hex[:8]}"
    worker = _worker(stack, address, queue, tmp_path / "worker.log")
    app = _sender(url, sentinels)
    try:
        with override_settings(REDIS_URL=url, REDIS_SENTINELS=sentinels):
            console = redis_channel.client()
            engine = control.client(url, 2, sentinels)
            console.set("isthmus:ha:before", "kept")
            assert console.wait(1, 5000) == 1  # the replica has it
            assert _run_task(app, queue, 1, 60) == [1]

            killed = time.monotonic()
            assert processes.stop(stack.pidfile("redis"), sig=signal.SIGKILL) is not None
            # One call each, no retry of the test's: the clients wait for the new master.
            console.set("isthmus:ha:after", "written")
            console_back = time.monotonic() - killed
            engine.set("isthmus:ha:engine", "written")
            engine_back = time.monotonic() - killed
            assert _run_task(app, queue, 2, 60) == [2]
            task_back = time.monotonic() - killed

            promoted = _role(stack.replica_port)
            assert promoted["role"] == "master"
            assert console.get("isthmus:ha:before") == b"kept"
            assert redis_channel.ping() == {"ok": True}

            # The old master, started again as it was, is made a replica of the new one.
            stack.up(["redis"], echo=lambda _: None)
            restarted = time.monotonic()
            demoted = processes.wait_for(
                lambda: (
                    _role(stack.redis_port)["role"] == "slave"
                    and _role(stack.redis_port)["master_link_status"] == "up"
                ),
                FAILOVER_S * 2,
            )
            assert demoted, f"the old master is not a replica: {_role(stack.redis_port)}"
            rejoined = time.monotonic() - restarted
            assert _role(stack.redis_port)["master_port"] == stack.replica_port
            assert redis.Redis(port=stack.redis_port).get("isthmus:ha:after") == b"written"
    finally:
        worker.terminate()
        worker.wait(timeout=30)
    print(
        f"\nRedis master killed: console's client wrote again after {console_back:.1f} s, "
        f"the engine's after {engine_back:.1f} s, a Celery task sent then ran in "
        f"{task_back:.1f} s; the old master, restarted, was a replica in {rejoined:.1f} s"
    )
    assert console_back < FAILOVER_S and engine_back < FAILOVER_S
    assert task_back < FAILOVER_S * 2


def test_a_frozen_master_is_replaced_while_a_request_waits_on_it(sentinel_stack):
    """A master that stops answering (`kill -STOP`, as a host cut off): the request under way
    times out, and its retries find the new master. (redis-py's own retries kept to the old
    address for 31 s here and failed: infra/redis_connect.py's _MasterConnection.)"""
    stack = sentinel_stack
    url = f"redis://127.0.0.1:{stack.redis_port}/0"
    address = {"ISTHMUS_REDIS_SENTINELS": f"127.0.0.1:{stack.sentinel_port}"}
    sentinels = redis_connect.sentinels_from(address, "", url)
    console, engine = redis_connect.client(url, sentinels, 2), control.client(url, 1, sentinels)
    console.set("isthmus:ha:before", "kept")
    engine.set("isthmus:ha:before", "kept")
    running = processes.read_pidfile(stack.pidfile("redis"))
    assert running is not None
    os.kill(running.pid, signal.SIGSTOP)
    try:
        frozen = time.monotonic()
        console.set("isthmus:ha:after", "written")
        console_back = time.monotonic() - frozen
        engine.set("isthmus:ha:engine", "written")
        engine_back = time.monotonic() - frozen
    finally:
        os.kill(running.pid, signal.SIGCONT)
    print(
        f"\nRedis master frozen: console's client wrote again after {console_back:.1f} s, "
        f"the engine's after {engine_back:.1f} s"
    )
    assert console.connection_pool.master_address == ("127.0.0.1", stack.replica_port)
    assert console_back < FAILOVER_S and engine_back < FAILOVER_S
