"""A merge flow copies exactly once through what kills a copy: five `kill -9`s of the engine
(whole, its Python driver, a slot's Python worker) and a restart of the destination broker that
leads a partition, while the source is written. Read with `read_committed`, the destination
topic holds every source record once, each with its key, value, headers, timestamp and origin;
and every checkpoint the engine reported meanwhile (its pairs for consumer offset sync) is
exact: the records copied from below its source offset lie below its destination offset, the
others at or above it.
"""

from __future__ import annotations

import contextlib
import random
import threading
import time
from collections import Counter

import pytest
import redis

from devstack import kafka
from infra.kafka_admin import KafkaAdmin
from infra.kafka_errors import KafkaAdminError
from replication.core.redis_channel import client
from replication.engine import process, supervise
from replication.topics import merge_flows
from spark_jobs import control, merging
from tests.conftest import admin_config
from tests.faults.conftest import in_sync, leader
from tests.integration.test_stream_failures import _kill, _targets, quick_restarts  # noqa: F401
from tests.kafka_clients import SteadyWriter
from tests.mirror_checks import ACTOR, eventually, read_all

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

PARTITIONS = 4


def _written(topic: str) -> int:
    try:
        admin = KafkaAdmin(admin_config(kafka.DESTINATION), timeout=10)
        return sum(admin.end_offsets(topic, PARTITIONS).values())
    except KafkaAdminError:  # a leader moving, a broker down
        return -1


def _checkpoints(link, stop: threading.Event, found: set) -> None:
    """Every checkpoint the link's heartbeat reports, (partition, next, dest), until `stop`."""
    key = control.heartbeat_key(str(link.link_id))
    while not stop.wait(0.1):
        with contextlib.suppress(redis.RedisError):
            for flow in ((control.read_json(client(), key) or {}).get("flows") or {}).values():
                for p, report in flow["partitions"].items():
                    if report.get("checkpoint"):
                        found.add((int(p), *report["checkpoint"]))


def _past(link, topic: str, records: int, working: bool = True) -> int:
    def more() -> int:
        supervise.supervise(link)
        written = _written(topic)
        ready = written > records and (not working or "task worker" in _targets(link))
        return written if ready else 0

    return eventually(more, 240, f"the flow writing past {records} records")


def test_a_merge_flow_copies_exactly_once_through_five_kills_and_a_broker_restart(
    make_link,
    make_topic,
    topic_name,
    stack,
    tmp_path,
    quick_restarts,  # noqa: F811
):
    source = make_topic(kafka.SOURCE, topic_name, PARTITIONS, **{"min.insync.replicas": "2"})
    into = f"{topic_name}.replica"
    link = make_link()
    merge_flows.create_flow(ACTOR, link, source, into)

    def running() -> bool:
        supervise.supervise(link)
        return "task worker" in _targets(link)

    eventually(running, 240, "the engine running the flow")  # before the source is written
    writer = SteadyWriter(source, PARTITIONS, idempotent=True)
    writer.start()
    checkpoints: set[tuple[int, int, int]] = set()
    stop = threading.Event()
    sampler = threading.Thread(target=_checkpoints, args=(link, stop, checkpoints), daemon=True)
    sampler.start()
    kinds = ["application", "python driver", "task worker"]
    plan = random.sample(kinds, 3) + random.choices(kinds, k=2)
    written, done = 0, []
    for what in plan:
        written = _past(link, into, written)
        time.sleep(random.uniform(0, 1.0))  # any moment, a transaction open or not
        _kill(link, what)
        done.append((what, written))
    broker = leader(kafka.DESTINATION, into)
    stack.down([broker.name], echo=lambda _: None)
    stack.up([broker.name], echo=lambda _: None)
    done.append((broker.name, _written(into)))
    in_sync(kafka.DESTINATION, into)
    records = writer.finish()

    wanted = read_all(kafka.SOURCE.bootstrap, source)
    assert len(wanted) == records
    found = []

    def all_copied() -> bool:
        supervise.supervise(link)
        found[:] = read_all(kafka.DESTINATION.bootstrap, into)  # read_committed
        return len(found) >= records

    eventually(all_copied, 300, f"{records} records in {into}")
    # A checkpoint reaches the heartbeat a few seconds after its transaction (the flow's
    # report, the slot's, the runner's): the last records can land before any is reported.
    eventually(
        lambda: {p for p, _, _ in checkpoints} == set(range(PARTITIONS)),
        60,
        "a checkpoint of every partition reported",
    )
    stop.set()
    # Where each copy resumed, kept beside the test and said on failure.
    engine_log = process.log_file().read_text(errors="replace")
    (tmp_path / "engine.log").write_text(engine_log)
    resumed = [line for line in engine_log.splitlines() if "Flow " in line]
    keys = Counter(r.key for r in found)
    assert len(found) == records and set(keys.values()) == {1}, (len(found), done, resumed)
    by_key = {r.key: r for r in found}
    for want in wanted:
        got = by_key[want.key]
        assert (got.partition, got.value, got.timestamp) == (
            want.partition,
            want.value,
            want.timestamp,
        )
        assert got.headers[:-1] == want.headers
        assert got.headers[-1][0] == merging.ORIGIN
        assert got.headers[-1][1].split(b",")[1:4] == [
            source.encode(),
            str(want.partition).encode(),
            str(want.offset).encode(),
        ]
    # Every checkpoint reported through the kills parts the destination partition exactly.
    # (a few per partition: the engine spends most of the run restarting)
    assert {p for p, _, _ in checkpoints} == set(range(PARTITIONS)), checkpoints
    origin = {(r.partition, r.offset): int(r.headers[-1][1].split(b",")[3]) for r in found}
    for partition, next_offset, dest in checkpoints:
        for (p, offset), source_offset in origin.items():
            if p == partition:
                assert (source_offset < next_offset) == (offset < dest), (
                    partition,
                    next_offset,
                    dest,
                    offset,
                    source_offset,
                )
