"""A link stream killed at any moment, or cut off by a broker restart, resumes exactly where
each mirror partition stopped: the copy ends with every record once."""

from __future__ import annotations

import os
import random
import signal
import time
import uuid

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from devstack import kafka
from infra.kafka_admin import KafkaAdmin, KafkaAdminError
from infra.processes import read_pidfile
from replication import streams
from replication.mirrors import create_mirror
from tests.conftest import admin_config
from tests.mirror_checks import ACTOR, assert_exact_copy, committed_link, run_until_copied

pytestmark = [pytest.mark.integration, pytest.mark.django_db]

RECENT = int(time.time() * 1000) - 600_000


def _source_topic(records: int, partitions: int = 4) -> str:
    topic = f"failures-{uuid.uuid4().hex[:8]}"
    admin = AdminClient(admin_config(kafka.SOURCE))
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(30)
    producer = Producer(
        {"bootstrap.servers": kafka.SOURCE.bootstrap, "linger.ms": 20, "batch.size": 500_000}
    )
    for i in range(records):
        while True:
            try:
                producer.produce(
                    topic,
                    key=str(i).encode(),
                    value=random.randbytes(200),
                    partition=i % partitions,
                    timestamp=RECENT + i,
                    headers=[("i", str(i).encode())],
                )
                break
            except BufferError:
                producer.poll(0.1)
    assert producer.flush(60) == 0
    return topic


def _copied(topic: str, partitions: int = 4) -> int:
    admin = KafkaAdmin(admin_config(kafka.DESTINATION))
    try:
        return sum(admin.end_offsets(topic, partitions).values())
    except KafkaAdminError:  # a new topic's leaders, or a restarting broker
        return -1


def _stream(link):
    return read_pidfile(streams.folder(str(link.link_id)) / "stream.pid")


def _wait_for_more(link, topic: str, than: int, not_pid: int | None = None) -> int:
    """Supervise until a stream (not `not_pid`) is running and the mirror holds more than
    `than` records; return how many."""
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        streams.supervise(link)
        running, copied = _stream(link), _copied(topic)
        if running and running.pid != not_pid and copied > than:
            return copied
        time.sleep(0.3)
    raise AssertionError(f"the stream copied nothing past {than} records in 240 s")


@pytest.fixture
def quick_restarts(monkeypatch):
    # Short pauses between restarts.
    monkeypatch.setattr(streams, "BACKOFF_S", [1, 1, 1, 1, 1])


def test_killing_the_stream_with_sigkill_three_times_loses_and_repeats_nothing(
    django_db_blocker, quick_restarts
):
    topic = _source_topic(300_000)
    with committed_link(django_db_blocker, [topic]) as link:
        mirror = create_mirror(ACTOR, link, topic)
        copied, killed = 0, []
        while len(killed) < 3:
            copied = _wait_for_more(link, topic, copied, killed[-1] if killed else None)
            assert copied < 300_000, "the copy finished before the third kill"
            time.sleep(random.uniform(0, 0.5))  # any moment: mid-batch or between batches
            running = _stream(link)
            os.killpg(running.pid, signal.SIGKILL)  # the JVM and its Python workers
            killed.append(running.pid)
            time.sleep(0.5)
            copied = max(copied, _copied(topic))
        run_until_copied(link, [mirror], timeout=300)
        source = assert_exact_copy(topic, topic)
    assert len(source) == 300_000
    assert len({r.key for r in source}) == 300_000


def test_restarting_the_source_broker_mid_copy_loses_and_repeats_nothing(
    django_db_blocker, quick_restarts, stack
):
    topic = _source_topic(200_000)
    with committed_link(django_db_blocker, [topic]) as link:
        mirror = create_mirror(ACTOR, link, topic)
        _wait_for_more(link, topic, 0)
        stack.down(["source"], echo=lambda _: None)
        assert _copied(topic) < 200_000, "the copy ended before the broker went down"
        time.sleep(3)
        stack.up(["source"], echo=lambda _: None)
        run_until_copied(link, [mirror], timeout=300)
        source = assert_exact_copy(topic, topic)
    assert len(source) == 200_000
