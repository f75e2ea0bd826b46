"""A link at cluster scale: 1,000 partitions (100 topics of 10) mirrored automatically by prefix,
made in bulk and copied exactly (every partition's end offset equal to its source's, a sample
compared record by record), and a mirror added and one paused while they copy, without a busy
mirror beside them stalling.

Serial: a broker applies a thousand new partitions one log at a time (15 ms each here), and
meanwhile answers for no other new topic; beside it, other tests' topics stayed unknown to the
shared brokers for more than 30 s. On the serial stack its brokers are its own."""

from __future__ import annotations

import json
import time
import uuid

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import NewTopic
from django.utils import timezone

from devstack import kafka
from infra.admin_client import AdminClient
from infra.kafka_admin import KafkaAdmin
from infra.processes import wait_for
from replication.engine import supervise
from replication.models import MirrorTopic
from replication.sync import syncers
from replication.topics.mirrors import create_mirror, pause_mirror
from tests.conftest import admin_config
from tests.integration.test_mirror_control import Watcher, Writer
from tests.mirror_checks import ACTOR, assert_exact_copy, committed_link

pytestmark = [
    pytest.mark.integration,
    pytest.mark.django_db,
    pytest.mark.serial,
    pytest.mark.heavy,  # before the Kafka tier starts (tests/suite.py)
]

TOPICS, PARTITIONS, RECORDS = 100, 10, 5  # records in each partition
RECENT = int(time.time() * 1000) - 600_000


def _make_topics(names: list[str], partitions: int) -> None:
    """Made, and led: a broker takes seconds to open a thousand new logs after the controller
    has made them, and a producer that writes before then only thrashes its metadata."""
    admin = AdminClient(admin_config(kafka.SOURCE))
    for future in admin.create_topics([NewTopic(n, partitions, 1) for n in names]).values():
        future.result(60)
    source = KafkaAdmin(admin_config(kafka.SOURCE), 30)
    everyone = [(n, p) for n in names for p in range(partitions)]
    assert wait_for(lambda: not source.readable_offsets(everyone)[1], 120, 0.5, ignore=())


def _fill(names: list[str]) -> None:
    """RECORDS in each partition, each with its key, headers and timestamp. A request the
    broker leaves unanswered is asked again after 15 s, not librdkafka's 60 (once, 954 of the
    1,000 partitions waited out those 60 s, then were delivered within 2 s of asking again).
    Idempotent, because the first request may still land: in CI, one did, and 75 partitions
    held their records twice."""
    producer = Producer(
        {
            "bootstrap.servers": kafka.SOURCE.bootstrap,
            "linger.ms": 5,
            "socket.timeout.ms": 15_000,
            "enable.idempotence": True,
        }
    )
    for name in names:
        for p in range(PARTITIONS):
            for i in range(RECORDS):
                producer.produce(
                    name,
                    key=f"{p}-{i}".encode(),
                    value=f"{name}/{p}/{i}".encode(),
                    partition=p,
                    headers=[("n", str(i).encode())],
                    timestamp=RECENT + i,
                )
        producer.poll(0)
    assert producer.flush(90) == 0


def _ends(node: kafka.KafkaNode, names: list[str]) -> dict[tuple[str, int], int]:
    admin = KafkaAdmin(admin_config(node), 30)
    return admin.offsets([(n, p) for n in names for p in range(PARTITIONS)])


def test_a_thousand_partitions_are_mirrored_by_prefix_in_bulk_and_copied_exactly_while_changing(
    devstack, django_db_blocker
):
    prefix = f"scale-{uuid.uuid4().hex[:6]}-"
    names = [f"{prefix}{i:03d}" for i in range(TOPICS)]
    busy, added = f"{prefix}busy", f"{prefix}added"
    _make_topics(names, PARTITIONS)
    _make_topics([busy, added], 2)
    _fill(names)
    filters = {
        "topicFilters": [{"name": prefix, "patternType": "PREFIXED", "filterType": "INCLUDE"}]
    }
    configs = {
        "auto.create.mirror.topics.enable": "true",
        "auto.create.mirror.topics.filters": json.dumps(
            {**filters, "topicFilters": [*filters["topicFilters"], *_excluded(busy, added)]}
        ),
    }
    with committed_link(django_db_blocker, [*names, busy, added], configs) as link:
        began = time.monotonic()
        syncers.sync_link(link, timezone.now())  # the beat's syncer: one metadata refresh
        made = time.monotonic() - began
        assert sorted(link.mirrors.values_list("mirror_topic", flat=True)) == names
        assert made < 30, f"making {TOPICS} mirrors took {made:.1f} s"

        wanted = _ends(kafka.SOURCE, names)
        assert sum(wanted.values()) == TOPICS * PARTITIONS * RECORDS

        destination = KafkaAdmin(admin_config(kafka.DESTINATION), 30)

        def copied() -> bool:
            supervise.supervise(link)
            found, _ = destination.readable_offsets(wanted)  # new leaders: some not yet
            return found == wanted

        assert wait_for(copied, 240, 1, ignore=()), "not every partition was copied"
        for name in names[:: TOPICS // 5]:  # a sample, record by record
            assert len(assert_exact_copy(name, name)) == PARTITIONS * RECORDS

        # Beside them, a busy mirror keeps copying while a mirror is added and one paused.
        busy_mirror = create_mirror(ACTOR, link, busy)
        busy_writer = Writer(busy, 1000)
        busy_writer.start()
        assert wait_for(lambda: _end(busy) > 0, 30, 0.05, ignore=()), "the busy mirror"
        watcher = Watcher(busy, 2)
        watcher.start()
        time.sleep(1)
        create_mirror(ACTOR, link, added)
        paused = pause_mirror(ACTOR, MirrorTopic.objects.get(mirror_topic=names[0]))
        supervise.supervise(link)
        time.sleep(3)
        watcher.done.set()
        busy_writer.done.set()
        watcher.join()
        busy_writer.join()
        assert paused.state == MirrorTopic.State.PAUSED
        # Sampled every 50 ms from this process, beside a whole suite on two cores (0.0 s
        # measured alone): the margin above a second is the sampling's, not the engine's.
        assert watcher.longest_stall < 1.5, (
            f"the busy mirror stopped copying for {watcher.longest_stall:.1f} s"
        )

        def busy_copied() -> bool:
            supervise.supervise(link)
            return _end(busy) == busy_writer.written

        assert wait_for(busy_copied, 60, 0.5, ignore=()), "the busy mirror did not catch up"
        assert len(assert_exact_copy(busy, busy_mirror.mirror_topic)) == busy_writer.written


def _excluded(*topics: str) -> list[dict]:
    """The busy and added topics are mirrored by hand, not automatically."""
    return [{"name": t, "patternType": "LITERAL", "filterType": "EXCLUDE"} for t in topics]


def _end(topic: str) -> int:
    admin = KafkaAdmin(admin_config(kafka.DESTINATION))
    return sum(admin.end_offsets(topic, 2).values())
