"""Mirrors on three-broker clusters (replication factor 3, min.insync.replicas 2) through the
faults production sees: `kill -9` of a partition's leader on either side mid-copy, a rolling
restart of every destination broker, two destination brokers down at once, and a copier cut
off from Redis while a leader changes under it. Each ends with every record compared, by Kafka's
clients and by the console's own verification."""

from __future__ import annotations

import time

import pytest
import redis
from django.conf import settings

from devstack import kafka
from infra.kafka_admin import KafkaAdmin
from infra.kafka_errors import KafkaAdminError
from replication.engine import supervise
from replication.models import Verification
from replication.observe import verification_requests
from replication.topics.mirrors import create_mirror
from spark_jobs import copier
from tests import leftovers
from tests.conftest import admin_config
from tests.faults.conftest import in_sync, kill, leader
from tests.kafka_clients import SteadyWriter
from tests.mirror_checks import ACTOR, assert_exact_copy, eventually, run_until_copied
from tests.slots import Proxy, Source, end_slots, start_slot

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

PARTITIONS = 4


def _topic(make_topic, name: str, partitions: int = PARTITIONS) -> str:
    """A source topic as production makes them: three replicas, two in sync to take a write."""
    return make_topic(kafka.SOURCE, name, partitions, **{"min.insync.replicas": "2"})


def _mirrored(topic: str, partitions: int = PARTITIONS) -> int:
    try:
        admin = KafkaAdmin(admin_config(kafka.DESTINATION), timeout=10)
        return sum(admin.end_offsets(topic, partitions).values())
    except KafkaAdminError:  # a leader moving, a broker down
        return -1


def _copying_past(link, topic: str, records: int) -> None:
    def past() -> bool:
        supervise.supervise(link)
        return _mirrored(topic) > records

    eventually(past, 240, f"the mirror holding more than {records} records")


def _verified_identical(mirror) -> None:
    """The console's own verification of the whole mirror finds every record identical."""
    found = verification_requests.start(ACTOR, mirror)
    verification_requests.run(found.pk)
    found = Verification.objects.get(pk=found.pk)
    assert found.state == Verification.State.IDENTICAL, verification_requests.outcome(found)
    assert found.identical == found.total


def _copy_through(link, make_topic, topic_name, fault) -> None:
    """Once the engine copies, write 2,000 records a second, run `fault` once the copy is
    under way, write on a few seconds after it, and check that the mirror ends an exact copy."""
    topic = _topic(make_topic, topic_name)
    mirror = create_mirror(ACTOR, link, topic)
    run_until_copied(link, [mirror])  # the engine started and read the (empty) source
    writer = SteadyWriter(topic, PARTITIONS, idempotent=True)
    writer.start()
    _copying_past(link, topic, 5_000)
    fault(topic)
    records = writer.finish()
    run_until_copied(link, [mirror], timeout=300)
    source = assert_exact_copy(topic, topic)
    assert len(source) == records and len({r.key for r in source}) == records
    _verified_identical(mirror)


# Every fault on both copy paths: the batch path (the default) sends a refused batch again
# with its sequence; the record path leaves that to its producer.
PATHS = pytest.mark.parametrize("path", ["BATCH", "RECORD"], ids=["batch-path", "record-path"])


@PATHS
@pytest.mark.parametrize("side", [kafka.DESTINATION, kafka.SOURCE], ids=lambda n: n.name)
def test_kill_9_of_a_partition_leader_mid_copy_loses_and_repeats_nothing(
    side, path, make_link, make_topic, topic_name, stack
):
    def fault(topic: str) -> None:
        broker = leader(side, topic)
        kill(stack, broker)
        time.sleep(5)  # leadership moves to an in-sync follower; the clients follow it
        stack.up([broker.name], echo=lambda _: None)
        in_sync(side, topic)

    _copy_through(make_link({"mirror.copy.path": path}), make_topic, topic_name, fault)


@PATHS
def test_a_rolling_restart_of_every_destination_broker_loses_and_repeats_nothing(
    path, make_link, make_topic, topic_name, stack
):
    def fault(topic: str) -> None:
        for broker in kafka.DESTINATION.brokers:  # one at a time, each back in sync first
            stack.down([broker.name], echo=lambda _: None)
            stack.up([broker.name], echo=lambda _: None)
            in_sync(kafka.DESTINATION, topic)

    _copy_through(make_link({"mirror.copy.path": path}), make_topic, topic_name, fault)


@PATHS
def test_two_destination_brokers_down_the_copy_waits_loses_nothing_and_resumes(
    path, make_link, make_topic, topic_name, stack
):
    link = make_link({"mirror.copy.path": path})

    def fault(topic: str) -> None:
        down = kafka.DESTINATION.brokers[1:]
        for broker in down:
            stack.down([broker.name], echo=lambda _: None)
        # One broker left: fewer in-sync replicas than min.insync.replicas (and no controller
        # quorum). The stream goes on trying while the source is written.
        for _ in range(15):
            supervise.supervise(link)
            time.sleep(1)
        for broker in down:
            stack.up([broker.name], echo=lambda _: None)
        in_sync(kafka.DESTINATION, topic)

    _copy_through(link, make_topic, topic_name, fault)


@pytest.mark.parametrize("path", ["batch", "record"], ids=["batch-path", "record-path"])
def test_a_copier_cut_off_from_redis_while_its_leader_changes_writes_nothing_more(
    path, make_topic, stack
):
    topic = leftovers.unique_name("zombie")
    for node in kafka.NODES:
        make_topic(node, topic, partitions=2, **{"min.insync.replicas": "2"})
    r = redis.Redis.from_url(settings.REDIS_URL)
    proxy = Proxy.to(r)
    engine = leftovers.unique_name("zombie")
    old = start_slot(r, engine, "e1", topic, proxy.url(r), path=path)
    source = Source(topic, idempotent=True)
    source.start()
    tasks = [old]
    try:
        eventually(lambda: _mirrored(topic, 2) >= 2_000, 60, "the old epoch copying")
        # Cut off from the control channel, and its partition's leader killed at once: what it
        # had sent to the old leader must not surface under the new epoch's records.
        broker = leader(kafka.DESTINATION, topic)
        topic_id = KafkaAdmin(admin_config(kafka.DESTINATION)).describe_topic(topic).topic_id
        proxy.cut()
        kill(stack, broker)
        time.sleep(copier.CONTACT_S + 1.5)  # the engine's wait before a new epoch (rule 3)
        tasks.append(start_slot(r, engine, "e2", topic, settings.REDIS_URL, topic_id, path))
        stack.up([broker.name], echo=lambda _: None)
        proxy.mend()  # the old slot hears of the new epoch, and ends
        old.join(30)
        assert not old.is_alive(), "the old epoch's slot went on beside the new one"
        source.done.set()
        source.join()
        written = source.written
        eventually(lambda: _mirrored(topic, 2) >= written, 120, "the new epoch catching up")
        in_sync(kafka.DESTINATION, topic)
        assert len(assert_exact_copy(topic, topic)) == written
    finally:
        source.done.set()
        end_slots(r, engine, tasks)
