"""A test session removes what it made on shared clusters, and only that (issue 13): `make test`
may run beside a user's `make demo` and beside other test runs."""

from __future__ import annotations

import secrets
import time
import uuid

import psutil
import pytest
import redis
from confluent_kafka import Consumer, Producer

from devstack import kafka
from infra import processes
from infra.kafka_admin import KafkaAdmin
from infra.processes import wait_for
from replication.core import read_only
from replication.engine import process
from spark_jobs import control
from tests import leftovers
from tests.conftest import TEST_REDIS_URL, admin_config

pytestmark = pytest.mark.integration


def test_only_markers_older_than_any_live_session_are_stale():
    now = time.time()
    long_ago = int(now - leftovers.STALE_AFTER_S - 60)
    assert leftovers.stale(f"us-east.itest-{long_ago:08x}beef-test-x-0123abcd", now)
    assert not leftovers.stale(f"itest-{int(now - 60):08x}beef-test-x-0123abcd", now)
    assert not leftovers.stale(leftovers.unique_name("x"), now)
    # Names from before the marker: nothing proves them the tests', so they are never touched.
    assert not leftovers.stale("test-a-paused-link-is-not-synced-29fbe29f", now)


def _commit_a_group(node: kafka.KafkaNode, topic: str, group: str) -> None:
    """A consumer group that stays on the cluster: it has a committed offset."""
    consumer = Consumer(
        {"bootstrap.servers": node.bootstrap, "group.id": group, "auto.offset.reset": "earliest"}
    )
    try:
        consumer.subscribe([topic])
        for _ in range(60):
            if (msg := consumer.poll(0.5)) is not None and msg.error() is None:
                consumer.commit(msg, asynchronous=False)
                return
        raise AssertionError(f"no record read from {topic}")
    finally:
        consumer.close()


def _things(node: kafka.KafkaNode, ledger: leftovers.Ledger, names: set[str]) -> set[str]:
    def named(name: str) -> bool:
        return name in names

    return (
        {f"topic {t}" for t in leftovers.topics(node, named)}
        | {f"ACL {b.name}" for b in leftovers.acls(node, named)}
        | {f"group {g}" for g in leftovers.groups(node, named)}
    )


def test_the_sweep_removes_what_a_session_made_and_nothing_else(devstack, tmp_path):
    """A session of its own (a marker and a link of its own) makes a topic on each cluster, a
    read-only mirror's ACLs, a consumer group, Redis keys and a running engine; beside them
    stand things it did not make, named alike: a user's `test-…` topic and group, and another
    session's marked topic. The sweep removes the first and leaves the others."""
    session = leftovers.Ledger(
        test_database=f"no-such-database-{uuid.uuid4()}",
        redis_urls=[TEST_REDIS_URL],
        mark=f"itest-{int(time.time()):08x}{secrets.token_hex(2)}",
    )
    link = str(uuid.uuid4())
    session.links.add(link)
    ours = f"{session.mark}-test-sweep-{secrets.token_hex(4)}"
    # Not ours: a user's topic named as the tests' were before the marker, and a topic of
    # another session alive beside this one (this very session, whose sweep removes it later).
    users = f"test-sweep-{secrets.token_hex(4)}"
    others = leftovers.unique_name("test-sweep")
    names = {ours, users, others, f"{ours}-group", f"{users}-group", f"{others}-group"}
    r = redis.Redis.from_url(TEST_REDIS_URL)
    other_link_key = f"isthmus:stream:{uuid.uuid4()}:mirrors"
    folder = process.engine_folder(session.test_database)
    engine_key = control.links_key(session.engine)
    try:
        for node in kafka.NODES:
            admin = KafkaAdmin(admin_config(node), timeout=30)
            for topic in (ours, users, others):
                admin.create_topic(topic, 1, None, {})
                if node is kafka.DESTINATION:  # a mirror's: read-only
                    assert read_only.enforce(admin, topic)
        producer = Producer({"bootstrap.servers": kafka.SOURCE.bootstrap})
        for topic in (ours, users, others):
            producer.produce(topic, b"r")
        assert producer.flush(30) == 0
        for topic in (ours, users, others):
            _commit_a_group(kafka.SOURCE, topic, f"{topic}-group")
        r.set(f"isthmus:stream:{link}:mirrors", "{}")
        r.hset(engine_key, link, "{}")
        r.set(other_link_key, "{}")
        folder.mkdir(parents=True)
        stream = processes.start(
            ["sleep", "300"],
            pidfile=folder / "engine.pid",
            logfile=folder / "engine.log",
            env={},
            cwd=folder,
        )
        # A process of the engine running without its pid file (restarted just before a
        # fixture removed its folder): found by its command line, stopped with its session.
        stray = processes.start(
            ["sh", "-c", "sleep 300 & wait", f"{folder}/isthmus-stream.zip"],
            pidfile=tmp_path / "stray.pid",
            logfile=tmp_path / "stray.log",
            env={},
            cwd=tmp_path,
        )
        (tmp_path / "stray.pid").unlink()
        assert wait_for(lambda: psutil.Process(stray).children(), 10)
        stray_family = [psutil.Process(stray), *psutil.Process(stray).children()]

        before = {node.name: _things(node, session, names) for node in kafka.NODES}
        assert before["source"] >= {f"topic {ours}", f"group {ours}-group"}
        assert before["destination"] >= {f"topic {ours}", f"ACL {ours}"}
        left = leftovers.remaining(session, wait=0)
        assert f"source topic {ours}" in left and f"folder {folder}" in left

        removed = leftovers.sweep(session)

        assert f"destination topic {ours}" in removed and f"source group {ours}-group" in removed
        assert leftovers.remaining(session) == []
        assert not psutil.pid_exists(stream) or psutil.Process(stream).status() == "zombie"
        assert not [p for p in stray_family if p.is_running() and p.status() != "zombie"]
        assert not folder.exists()
        kept = {node.name: _things(node, session, names) for node in kafka.NODES}
        for node in kafka.NODES:
            assert {f"topic {users}", f"topic {others}"} <= kept[node.name]
            assert not {f"topic {ours}", f"ACL {ours}", f"group {ours}-group"} & kept[node.name]
        assert {f"ACL {users}", f"ACL {others}"} <= kept["destination"]
        assert {f"group {users}-group", f"group {others}-group"} <= kept["source"]
        assert r.exists(other_link_key) and not r.exists(engine_key)
    finally:
        # The stand-ins go too (the user's has no marker: only this test knows it).
        leftovers.sweep(session)
        for node in kafka.NODES:
            leftovers.delete_topics(node, [users, others])
            leftovers.delete_groups(node, [f"{users}-group", f"{others}-group"])
        r.delete(other_link_key)


def test_the_sweep_stops_a_worker_left_on_the_sessions_redis(devstack, tmp_path):
    """A Celery worker killed alone leaves its embedded beat sending tasks to the session's Redis
    database: any process on that database but pytest is stopped, and `remaining` names it."""
    session = leftovers.Ledger(
        test_database=f"no-such-database-{uuid.uuid4()}",
        redis_urls=[TEST_REDIS_URL],
        mark=f"itest-{int(time.time()):08x}{secrets.token_hex(2)}",
        workers_redis_url=f"redis://127.0.0.1:1/{uuid.uuid4()}",  # this test's alone
    )
    beat = processes.start(
        ["sleep", "300"],
        pidfile=tmp_path / "beat.pid",
        logfile=tmp_path / "beat.log",
        env={"REDIS_URL": session.workers_redis_url},
        cwd=tmp_path,
    )
    try:
        assert any(str(beat) in line for line in leftovers.remaining(session, wait=0))

        assert any(line.startswith(f"process {beat}:") for line in leftovers.sweep(session))

        assert leftovers.remaining(session) == []
        assert not psutil.pid_exists(beat) or psutil.Process(beat).status() == "zombie"
    finally:
        processes.stop(tmp_path / "beat.pid", timeout=5)
