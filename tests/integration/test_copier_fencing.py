"""A slot's copiers write only while the slot hears from the control channel and its epoch is
current: cut off from Redis they stop writing within seconds, and a new epoch stops them at
once. The slot runs here in a thread, against the real clusters and a real Redis reached
through a proxy the test can cut."""

from __future__ import annotations

import time

import pytest
import redis
from confluent_kafka import Producer
from django.conf import settings

from devstack import kafka
from infra import processes
from infra.kafka_admin import KafkaAdmin
from spark_jobs import batch_copier, control, copier, source_readers
from tests import leftovers
from tests.conftest import admin_config
from tests.mirror_checks import assert_exact_copy, eventually
from tests.slots import Proxy, Source, end_slots, start_slot

pytestmark = pytest.mark.integration

RECENT = int(time.time() * 1000) - 600_000


def _mirrored(topic: str) -> int:
    return sum(KafkaAdmin(admin_config(kafka.DESTINATION)).end_offsets(topic, 2).values())


def _still_for(topic: str, seconds: float) -> bool:
    before = _mirrored(topic)
    time.sleep(seconds)
    return _mirrored(topic) == before


@pytest.fixture(params=["batch", "record"], ids=["batch-path", "record-path"])
def fenced_task(request, make_topic):
    """A slot running a copier of a one-mirror link, its Redis reached through a proxy; the
    test plays the engine's driver by writing the epoch, the link and its assignment."""
    topic = leftovers.unique_name("fencing")
    for node in (kafka.SOURCE, kafka.DESTINATION):
        make_topic(node, topic, partitions=2)
    r = redis.Redis.from_url(settings.REDIS_URL)
    proxy = Proxy.to(r)
    engine, epoch = leftovers.unique_name("fencing"), "e1"
    task = start_slot(r, engine, epoch, topic, proxy.url(r), path=request.param)
    source = Source(topic)
    source.start()
    yield type(
        "Fenced",
        (),
        dict(topic=topic, proxy=proxy, task=task, source=source, r=r, engine=engine, epoch=epoch),
    )
    source.done.set()
    end_slots(r, engine, [task])


class AlwaysInTouch:
    """A slot that never loses the control channel: the copier alone is under test."""

    ended = False

    def __init__(self):
        self.readers = source_readers.Readers("test")

    def in_touch(self) -> bool:
        return True

    def destination_admin(self, config: dict[str, str]) -> KafkaAdmin:
        return KafkaAdmin(config, timeout=15)

    def report_soon(self) -> None:
        pass

    def unclean(self, partitions: list[str]) -> bool:
        return False

    def writing(self, partitions: list[str], cleanly_ended: bool = False) -> None:
        pass


def test_a_slot_cut_off_from_the_control_channel_stops_writing_and_resumes_exactly(fenced_task):
    f = fenced_task
    eventually(lambda: _mirrored(f.topic) >= 1000, 30, "the task copying")

    f.proxy.cut()
    time.sleep(copier.CONTACT_S + 1)  # it stops writing within CONTACT_S of its last contact
    assert _still_for(f.topic, 4), "the task wrote while cut off from the control channel"
    beat = f.r.pttl(control.slot_report_key(f.engine, 0, f.epoch))
    assert beat == -2, "the slot's report outlived its silence"  # the new epoch may start

    f.proxy.mend()
    eventually(lambda: not _still_for(f.topic, 2), 30, "the task resuming once the channel is back")
    f.source.done.set()
    f.source.join()
    eventually(lambda: _mirrored(f.topic) >= f.source.written, 60, "the task catching up")
    assert len(assert_exact_copy(f.topic, f.topic)) == f.source.written


def test_a_new_epoch_stops_the_slot_at_once_and_it_says_so(fenced_task):
    f = fenced_task
    eventually(lambda: _mirrored(f.topic) >= 1000, 30, "the task copying")

    f.r.set(control.slot_epoch_key(f.engine, 0), "e2")
    f.task.join(5)
    assert not f.task.is_alive(), "the slot went on after its epoch ended"
    assert not f.r.exists(control.slot_report_key(f.engine, 0, f.epoch)), "its report stayed"
    assert _still_for(f.topic, 2), "the task wrote after its epoch ended"


@pytest.mark.parametrize(
    "kind", [batch_copier.BatchCopier, copier.Copier], ids=["batch-path", "record-path"]
)
def test_a_copier_that_finds_another_writer_on_its_partition_stops_instead_of_writing_on(
    kind, make_topic
):
    topic = leftovers.unique_name("fencing")
    for node in (kafka.SOURCE, kafka.DESTINATION):
        make_topic(node, topic)
    producer = Producer({"bootstrap.servers": kafka.SOURCE.bootstrap})
    for i in range(10):
        producer.produce(topic, str(i).encode(), partition=0, timestamp=RECENT + i)
    assert producer.flush(30) == 0
    topic_id = KafkaAdmin(admin_config(kafka.DESTINATION)).describe_topic(topic).topic_id
    task = kind(
        {
            "link_id": leftovers.unique_name("fencing"),
            "source": {"bootstrap.servers": kafka.SOURCE.bootstrap},
            "destination": {"bootstrap.servers": kafka.DESTINATION.bootstrap},
        },
        AlwaysInTouch(),
        0,
    )
    try:
        task.start(
            [{"mirror": topic, "source": topic, "topic_id": topic_id, "partition": 0, "runs": []}]
        )
        # Something else writes the mirror partition after the task read where it ends.
        stray = Producer({"bootstrap.servers": kafka.DESTINATION.bootstrap})
        stray.produce(topic, b"stray", partition=0)
        assert stray.flush(30) == 0

        with pytest.raises(copier.Fenced, match="something else writes this mirror partition"):
            processes.wait_for(lambda: task.copy(), 30, 0.05, ignore=())
    finally:
        task.close()
