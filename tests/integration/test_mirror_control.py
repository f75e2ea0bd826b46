"""A running link application takes up a new mirror, and lets go of a paused one, within a
second or so, while the mirrors not concerned keep copying; a promote waits for that."""

from __future__ import annotations

import threading
import time
import uuid

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import NewTopic

from devstack import kafka
from infra.admin_client import AdminClient
from infra.processes import wait_for
from replication.core.redis_channel import client
from replication.engine import publish, status
from replication.observe.lag import describe_mirror
from replication.topics.mirrors import create_mirror, pause_mirror
from spark_jobs import control
from tests.conftest import admin_config
from tests.mirror_checks import ACTOR, assert_exact_copy, committed_link, run_until_copied

pytestmark = [pytest.mark.integration, pytest.mark.django_db]

RECENT = int(time.time() * 1000) - 600_000


def _topic(partitions: int) -> str:
    topic = f"control-{uuid.uuid4().hex[:8]}"
    admin = AdminClient(admin_config(kafka.SOURCE))
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(30)
    return topic


class Writer(threading.Thread):
    """Writes `rate` records a second to a source topic until stopped."""

    def __init__(self, topic: str, rate: int):
        super().__init__(daemon=True)
        self.topic, self.rate, self.written = topic, rate, 0
        self.done = threading.Event()

    def run(self) -> None:
        producer = Producer({"bootstrap.servers": kafka.SOURCE.bootstrap, "linger.ms": 2})
        started = time.monotonic()
        while not self.done.is_set():
            due = int((time.monotonic() - started) * self.rate)
            for i in range(self.written, due):
                producer.produce(
                    self.topic, key=str(i).encode(), value=b"x" * 100, timestamp=RECENT + i
                )
            self.written = max(self.written, due)
            producer.poll(0.01)
        assert producer.flush(30) == 0


class Watcher(threading.Thread):
    """Samples a mirror's end offsets on the destination; `longest_stall` is the longest time
    it did not grow while watched."""

    def __init__(self, topic: str, partitions: int):
        super().__init__(daemon=True)
        self.topic, self.partitions = topic, partitions
        self.longest_stall, self.done = 0.0, threading.Event()

    def run(self) -> None:
        from infra.kafka_admin import KafkaAdmin

        admin = KafkaAdmin(admin_config(kafka.DESTINATION))
        last, since = -1, time.monotonic()
        while not self.done.is_set():
            now = time.monotonic()
            total = sum(admin.end_offsets(self.topic, self.partitions).values())
            if total != last:
                last, since = total, now
            self.longest_stall = max(self.longest_stall, now - since)
            time.sleep(0.05)


def _end(topic: str, partitions: int) -> int:
    from infra.kafka_admin import KafkaAdmin

    return sum(KafkaAdmin(admin_config(kafka.DESTINATION)).end_offsets(topic, partitions).values())


def _until(check, timeout: float, what: str) -> float:
    """How long `check` took to come true (within `timeout`)."""
    started = time.monotonic()
    assert wait_for(check, timeout, 0.05, ignore=()), f"{what} took over {timeout} s"
    return time.monotonic() - started


def test_adding_and_pausing_a_mirror_reaches_the_tasks_at_once_and_other_mirrors_keep_copying(
    devstack, django_db_blocker
):
    busy, added = _topic(4), _topic(2)
    busy_writer, added_writer = Writer(busy, 2000), Writer(added, 500)
    with committed_link(django_db_blocker, [busy, added]) as link:
        busy_mirror = create_mirror(ACTOR, link, busy)
        run_until_copied(link, [busy_mirror])  # the application runs
        epoch = control.read_json(client(), control.heartbeat_key(str(link.link_id)))["epochs"]
        busy_writer.start()
        watcher = Watcher(busy, 4)
        watcher.start()
        added_writer.start()
        time.sleep(1)

        mirror = create_mirror(ACTOR, link, added)
        generation = publish.publish(link, client())  # as the beat would, at its next tick
        first_record = _until(lambda: _end(added, 2) > 0, 10, "the new mirror's first record")
        # Its heartbeat names the mirrors its tasks write: the new one, a beat later.
        _until(lambda: added in status.progress(link).writing, 5, "the heartbeat naming it")

        pause_mirror(ACTOR, mirror)
        # Until the application lets go of it, the mirror's page says "pausing".
        letting_go_at_first = describe_mirror(mirror).letting_go
        generation = publish.publish(link, client())
        stopped = _until(
            lambda: publish.stopped_writing(link, added, generation), 10, "letting go of it"
        )
        held = _end(added, 2)
        time.sleep(2)
        still = _end(added, 2)
        letting_go_after = describe_mirror(mirror).letting_go
        watcher.done.set()
        busy_writer.done.set()
        added_writer.done.set()
        watcher.join()
        busy_writer.join()
        added_writer.join()
        heartbeat = control.read_json(client(), control.heartbeat_key(str(link.link_id)))

        # The same job took both changes: a relaunch would have waited CLAIM_WAIT_S (4.5 s)
        # for the old tasks before copying anything. The bounds leave room for a busy machine.
        assert heartbeat["epochs"] == epoch, "the application relaunched its job for the change"
        assert first_record < 4, f"the new mirror's first record came after {first_record:.1f} s"
        assert stopped < 4, f"the paused mirror was let go after {stopped:.1f} s"
        assert still == held, "a paused mirror was written after the application let go of it"
        assert letting_go_at_first and not letting_go_after
        assert watcher.longest_stall < 3, (
            f"the busy mirror stopped copying for {watcher.longest_stall:.1f} s"
        )
        assert heartbeat["generation"] >= generation and added not in heartbeat["mirrors"]
        run_until_copied(link, [busy_mirror])
        assert len(assert_exact_copy(busy, busy)) == busy_writer.written
