"""Real Kafka clients for the scenarios' steps: what a user types with kafka-console-producer,
kafka-console-consumer and a consumer group's application, done with confluent-kafka."""

from __future__ import annotations

import contextlib
import time

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition
from django.conf import settings

from infra import consuming
from infra.kafka_errors import KafkaAdminError
from replication.kafka.connections import cluster_admin
from replication.scenarios.runner import StepFailed, wait_for


def ordinary(cluster) -> dict[str, str]:
    """A client of no privilege on `cluster` (the tutorial's plain kafka-console-producer)."""
    bootstrap = settings.ISTHMUS_ORDINARY_BOOTSTRAP.get(cluster.name)
    if not bootstrap:
        raise StepFailed(
            f"an address for ordinary clients of {cluster.name} (ISTHMUS_ORDINARY_BOOTSTRAP)",
            "none is set",
        )
    return {"bootstrap.servers": bootstrap}


def produce(
    config: dict[str, str], topic: str, values: list[bytes], partitions: int = 1
) -> list[tuple]:
    """Each value's (error, partition, offset) as the broker answered; the values go round
    the first `partitions` partitions."""
    reports: list[tuple] = []
    producer = Producer({**config, "acks": "all", "message.timeout.ms": 15000})
    for i, value in enumerate(values):
        producer.produce(
            topic,
            value=value,
            partition=i % partitions,
            on_delivery=lambda err, msg: reports.append(
                (err, msg.partition(), msg.offset() if err is None else -1)
            ),
        )
    producer.flush(30)
    return reports


def read_from_start(config: dict[str, str], topic: str) -> list[bytes]:
    """Every value in partition 0 of `topic`, from the beginning (kafka-console-consumer
    --from-beginning)."""
    return [value for _, _, value, _ in read_partitions(config, topic, 1)]


def read_partitions(config: dict[str, str], topic: str, partitions: int) -> list[tuple]:
    """Every record of `topic`'s first `partitions` partitions from the beginning, as
    (partition, offset, value, headers), in partition and offset order."""
    consumer = Consumer(
        {
            **config,
            "group.id": f"{topic}-reader",
            "enable.partition.eof": True,
            "enable.auto.commit": False,
        }
    )
    records: list[tuple] = []
    ended: set[int] = set()
    try:
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and len(ended) < partitions:
            msg = consuming.poll(consumer, 1.0)
            if msg is None:
                continue
            if error := msg.error():
                if error.code() != KafkaError._PARTITION_EOF:
                    raise StepFailed("records", error.str())
                ended.add(msg.partition())
                continue
            records.append((msg.partition(), msg.offset(), msg.value(), msg.headers() or []))
    finally:
        consumer.close()
    return sorted(records, key=lambda r: (r[0], r[1]))


def consume_as_group(
    config: dict[str, str], topic: str, group: str, count: int | None, partitions: int
) -> list[bytes]:
    """What an application of `group` reads of `topic`: `count` records (all there are with
    None), committed, and then it stops. Starts where the group's offsets are, else at the
    beginning."""
    consumer = Consumer(
        {
            **config,
            "group.id": group,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "enable.partition.eof": True,
        }
    )
    values: list[bytes] = []
    ended: set[int] = set()
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and (count is None or len(values) < count):
            msg = consuming.poll(consumer, 1.0)
            if msg is None:
                continue
            if error := msg.error():
                if error.code() != KafkaError._PARTITION_EOF:
                    raise StepFailed("records", error.str())
                ended.add(msg.partition())
                if count is None and len(ended) == partitions:
                    break
                continue
            values.append(msg.value() or b"")
        if values:
            consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    return values


def quietly(call):
    """`call()`, or None when Kafka did not answer (for waiting until it does)."""
    with contextlib.suppress(KafkaAdminError):
        return call()
    return None


def create_topic(cluster, topic: str, partitions: int = 1):
    """`topic` made on `cluster`, once the cluster describes it (within 15 s): its description."""
    admin = cluster_admin(cluster)
    admin.create_topic(topic, partitions, None, {})
    return wait_for(
        lambda: quietly(lambda: admin.describe_topic(topic)),
        15,
        f"{topic} on {cluster.name}",
        lambda: "no such topic",
    )
