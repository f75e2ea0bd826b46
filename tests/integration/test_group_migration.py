"""Seed 001's "Migrating consumer groups from source to destination cluster", as a user runs it:
the link made with the tools and a group filter file, the consumer stopped on the source, a
wait for the sync, the offsets checked on both clusters with Apache Kafka's own
`kafka-consumer-groups`, the group excluded with the tutorial's `newFilters.properties`, and
the consumer started on the destination, where it goes on exactly where it stopped.

The real path throughout: the Celery worker's beat runs the link's stream and its syncers.
"""

from __future__ import annotations

import subprocess
import time

import pytest
from confluent_kafka import Consumer, KafkaError

from devstack import kafka
from replication.models import ClusterLink
from tests import leftovers
from tests.integration.test_cli import ok
from tests.kafka_clients import produce, run_tool
from tests.mirror_checks import eventually

pytestmark = [pytest.mark.integration]


LINK = "offsets-cluster-link"
GROUP = leftovers.unique_name("someGroup")
# Seed 001's echo, for this test's group (the seed's is `someGroup`).
NEW_FILTERS = (
    r'echo "consumer.offset.group.filters={\"groupFilters\": [ \ { \ \"name\": \"*\", \ '
    r"\"patternType\": \"LITERAL\", \ \"filterType\": \"INCLUDE\" \ }, \ { \ \"name\": "
    rf'\"{GROUP}\", \ \"patternType\": \"LITERAL\", \ \"filterType\": \"EXCLUDE\" \ }} \ ]}}" '
    r"> newFilters.properties"
)


def _describe_group(port: int) -> dict[int, tuple[int, int]]:
    """`kafka-consumer-groups --describe`: each partition's CURRENT-OFFSET and LOG-END-OFFSET."""
    out = run_tool(
        "kafka-consumer-groups",
        "--bootstrap-server",
        f"localhost:{port}",
        "--describe",
        "--group",
        GROUP,
    ).stdout
    rows = {}
    for line in out.splitlines():
        fields = line.split()
        if len(fields) >= 5 and fields[0] == GROUP and fields[2].isdigit():
            current = int(fields[3]) if fields[3].isdigit() else -1
            rows[int(fields[2])] = (current, int(fields[4]))
    return rows


def _synced_twice_more(name: str):
    """A check that comes true once link `name`'s offsets were synced twice after its first
    call (each run stamps `offsets_synced_at` as it starts, one run at a time)."""
    runs = set()

    def check() -> bool:
        runs.add(ClusterLink.objects.values_list("offsets_synced_at", flat=True).get(name=name))
        return len(runs) >= 3

    return check


def _consume(port: int, topic: str, count: int | None) -> list[bytes]:
    """Read `count` records of `topic` as `GROUP` (all there are, with None) and commit."""
    consumer = Consumer(
        {
            "bootstrap.servers": f"127.0.0.1:{port}",
            "group.id": GROUP,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "enable.partition.eof": True,
        }
    )
    values, ended = [], set()
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and (count is None or len(values) < count):
            msg = consumer.poll(1.0)
            if msg is None:
                continue
            if msg.error():
                assert msg.error().code() == KafkaError._PARTITION_EOF, msg.error().str()
                ended.add(msg.partition())
                if count is None and ended == {0, 1}:
                    break
                continue
            values.append(msg.value())
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()  # stopped: the group has no member left
    return values


def test_the_seeds_consumer_group_migration(
    transactional_db, celery_worker, typed, make_topic, topic_name, tmp_path
):
    make_topic(kafka.SOURCE, topic_name, partitions=2)
    produce(
        {"bootstrap.servers": kafka.SOURCE.bootstrap},
        topic_name,
        [{"value": f"{i}".encode(), "partition": i % 2} for i in range(100)],
    )
    (tmp_path / "link.properties").write_text(
        "bootstrap.servers=localhost:9092\nmetadata.max.age.ms=5000\n"
        "consumer.offset.sync.enable=true\nconsumer.offset.sync.ms=2000\n"
    )
    (tmp_path / "groups.json").write_text(
        '{"groupFilters": [{"name": "*", "patternType": "LITERAL", "filterType": "INCLUDE"}]}'
    )
    ok(
        typed(
            f"kafka-cluster-links --bootstrap-server localhost:9093 --create --link {LINK} "
            f"--config-file {tmp_path}/link.properties "
            f"--consumer-group-filters-json-file {tmp_path}/groups.json"
        )
    )
    ok(
        typed(
            f"kafka-mirrors --create --mirror-topic {topic_name} --link {LINK} "
            "--bootstrap-server localhost:9093"
        )
    )
    try:
        # The consumer reads 60 of the 100 records on the source, commits, and is stopped.
        first = _consume(kafka.SOURCE.plaintext_port, topic_name, 60)
        source = _describe_group(kafka.SOURCE.plaintext_port)
        assert sum(current for current, _ in source.values()) == 60

        # Wait for the sync; replication is beyond the committed offsets; they match.
        eventually(
            lambda: (
                {p: c for p, (c, _) in _describe_group(kafka.DESTINATION.plaintext_port).items()}
                == {p: c for p, (c, _) in source.items()}
            ),
            60,
            "the group's offsets reaching the destination",
        )
        for partition, (current, log_end) in _describe_group(
            kafka.DESTINATION.plaintext_port
        ).items():
            assert log_end >= current == source[partition][0]

        # The tutorial's newFilters.properties takes the group out of the sync.
        subprocess.run(["bash", "-c", NEW_FILTERS], cwd=tmp_path, check=True, timeout=30)
        assert ok(
            typed(
                f"kafka-configs --bootstrap-server localhost:9093 --alter --cluster-link {LINK} "
                f"--add-config-file {tmp_path}/newFilters.properties"
            )
        ) == [f"Completed updating config for cluster-link {LINK}."]

        # The consumer starts on the destination and reads exactly the other 40.
        rest = _consume(kafka.DESTINATION.plaintext_port, topic_name, None)
        assert sorted(first + rest, key=int) == [f"{i}".encode() for i in range(100)]
        assert len(rest) == 40

        # Excluded, the group is the destination's own: no sync rewinds it to the source's, as
        # two more offset syncs show (the second starts only after the first is done).
        eventually(_synced_twice_more(LINK), 30, "two more offset syncs")
        assert all(
            c == end for c, end in _describe_group(kafka.DESTINATION.plaintext_port).values()
        )
    finally:
        delete = f"kafka-cluster-links --bootstrap-server localhost:9093 --delete --link {LINK}"
        ok(typed(f"{delete} --force", role="admin"))  # its mirror becomes an ordinary topic
        leftovers.delete_topics(kafka.DESTINATION, [topic_name])
        for node in kafka.NODES:
            leftovers.delete_groups(node, [GROUP])
    assert not ClusterLink.objects.filter(name=LINK).exists()
