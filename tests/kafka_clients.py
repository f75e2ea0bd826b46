"""Plain Kafka clients and Kafka's own CLI tools, used by tests as independent judges."""

from __future__ import annotations

import random
import subprocess
import threading
import time
from typing import TYPE_CHECKING

from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import (
    ResourcePatternType,
    ResourceType,
)
from django.test import override_settings

from devstack import kafka
from infra.admin_client import AdminClient
from infra.kafka_acls import acl_filter
from infra.kafka_admin import KafkaAdmin
from infra.kafka_groups import COORDINATOR_LOADING
from replication.kafka import connections
from tests.conftest import ROOT, admin_config

if TYPE_CHECKING:
    from replication.models import ClusterLink

READ_ONLY_ACLS = {
    ("READ", "ALLOW"),
    ("DESCRIBE", "ALLOW"),
    ("DESCRIBE_CONFIGS", "ALLOW"),
    ("WRITE", "DENY"),
    ("ALTER_CONFIGS", "DENY"),
    ("ALTER", "DENY"),
}


PATIENT_S = 30  # what a loaded test broker is given to answer an admin request


def patient_admins(link: ClusterLink) -> tuple[KafkaAdmin, KafkaAdmin]:
    """The admins the beat hands a syncer (`connections.source_admin`, `destination_admin`),
    with PATIENT_S to answer instead of the console's 5 s, for a test that calls the syncer
    itself: the beat asks again at its next round, a test asks once (a loaded destination once
    took more than 5 s to take a new group's first offsets)."""
    with override_settings(KAFKA_ADMIN_TIMEOUT=PATIENT_S):
        return connections.source_admin(link), connections.destination_admin(link)


def produce(config: dict, topic: str, records: list[dict]) -> list:
    """Produce `records` and return each delivery report's (error, partition, offset)."""
    reports = []
    producer = Producer({**config, "enable.idempotence": True, "linger.ms": 0})
    for record in records:
        producer.produce(
            topic,
            on_delivery=lambda err, msg: reports.append((err, msg.partition(), msg.offset())),
            **record,
        )
    assert producer.flush(30) == 0, "records still queued after 30 s"
    return reports


def consume_all(bootstrap: str, topic: str, expected: int) -> list:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"reader-{topic}",  # never joined nor committed: left on no cluster
            "enable.auto.commit": False,
        }
    )
    # Assigned, not subscribed: a subscription would leave a consumer group on the cluster.
    partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
    records = []
    try:
        for _ in range(60):
            msg = consumer.poll(0.5)
            if msg is None:
                if len(records) >= expected:
                    break
                continue
            assert msg.error() is None, msg.error()
            records.append(msg)
    finally:
        consumer.close()
    return records


def commit_offsets(
    node: kafka.KafkaNode, group: str, positions: dict[tuple[str, int], int]
) -> None:
    """Commit `positions` for `group`, as a consumer that read up to them would. A group
    coordinator still settling (a fresh or just restarted broker) is asked again, as Kafka's
    own consumers do, for up to 30 s."""
    consumer = Consumer({**admin_config(node), "group.id": group, "enable.auto.commit": False})
    offsets = [TopicPartition(t, p, o) for (t, p), o in positions.items()]
    try:
        for attempt in range(30):
            try:
                consumer.commit(offsets=offsets, asynchronous=False)
                return
            except KafkaException as exc:
                if exc.args[0].code() not in COORDINATOR_LOADING or attempt == 29:
                    raise
                time.sleep(1)
    finally:
        consumer.close()


def run_tool(tool: str, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    """Run one of the bin/ wrappers of Kafka's CLI tools, as a user would type it."""
    return subprocess.run(
        [str(ROOT / "bin" / tool), *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )


def acls_on(node: kafka.KafkaNode, topic: str) -> set[tuple[str, str]]:
    """The (operation, permission) pairs granted to User:* on `topic`."""
    admin = AdminClient(admin_config(node))  # kept alive until the answer comes
    wanted = acl_filter(ResourceType.TOPIC, topic, ResourcePatternType.LITERAL)
    found = admin.describe_acls(wanted).result(timeout=10)
    return {(b.operation.name, b.permission_type.name) for b in found if b.principal == "User:*"}


def write_transactions(bootstrap: str, topic: str, timestamp_base: int | None = None) -> None:
    """6 transactions of 10 records per partition of `topic`'s 2, the second and fifth
    aborted: 40 committed records per partition at offsets 0 to 65, among transaction markers
    and aborted records. Timestamps from `timestamp_base` on, if given."""
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"tx-{topic}"})
    producer.init_transactions(30)
    for batch in range(6):
        producer.begin_transaction()
        for i in range(20):
            stamp = (
                {} if timestamp_base is None else {"timestamp": timestamp_base + batch * 100 + i}
            )
            producer.produce(
                topic,
                key=f"b{batch}-{i}".encode(),
                value=b"aborted" if batch % 3 == 1 else b"committed",
                partition=i % 2,
                **stamp,
            )
        if batch % 3 == 1:
            producer.flush(30)  # the aborted records reach the log before the abort marker
            producer.abort_transaction(30)
        else:
            producer.commit_transaction(30)


RECENT = int(time.time() * 1000) - 600_000  # within the brokers' retention


def ordinary(node: kafka.KafkaNode) -> dict:
    """A client of no privilege on `node`, bound by ACLs."""
    return {"bootstrap.servers": node.bootstrap}


def write_numbered(config: dict, topic: str, first: int, count: int) -> None:
    """Records `first` to `first + count - 1`: record i has key i, value "value i", header i=i,
    a timestamp RECENT + i, and goes to partition i % 2."""
    producer = Producer({**config, "queue.buffering.max.messages": 1_000_000})
    for i in range(first, first + count):
        producer.produce(
            topic,
            key=str(i).encode(),
            value=f"value {i}".encode(),
            partition=i % 2,
            timestamp=RECENT + i,
            headers=[("i", str(i).encode())],
        )
    assert producer.flush(30) == 0


def write_refused(node: kafka.KafkaNode, topic: str) -> bool:
    """Whether an ordinary client's write to `topic` is refused for want of rights."""
    errors = []
    producer = Producer({**ordinary(node), "message.timeout.ms": 10_000})
    producer.produce(topic, value=b"x", on_delivery=lambda err, msg: errors.append(err))
    producer.flush(15)
    return (
        bool(errors)
        and errors[0] is not None
        and errors[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    )


class SteadyWriter(threading.Thread):
    """Numbered records (key i, header i, a timestamp from RECENT on, 100 random bytes) at
    `per_second`, on a thread of its own from its start until `finish()` (or `records` of
    them): a fault lands while the source is written, however long the fault takes.
    `idempotent`: each once, whatever the source brokers do meanwhile."""

    def __init__(
        self,
        topic: str,
        partitions: int,
        per_second: float = 2_000,
        idempotent: bool = False,
        records: int | None = None,
    ):
        super().__init__(daemon=True)
        self.topic, self.partitions, self.per_second = topic, partitions, per_second
        self.idempotent, self.records = idempotent, records
        self.finishing = threading.Event()
        self.written = 0
        self.unacknowledged = -1  # until it has flushed

    def run(self) -> None:
        producer = Producer(
            {"bootstrap.servers": kafka.SOURCE.bootstrap, "linger.ms": 5}
            | (
                {"enable.idempotence": True, "message.timeout.ms": 300_000}
                if self.idempotent
                else {}
            )
        )
        started, step, i = time.monotonic(), max(1, int(self.per_second) // 100), 0
        while not self.finishing.is_set() and (self.records is None or i < self.records):
            while True:
                try:
                    producer.produce(
                        self.topic,
                        key=str(i).encode(),
                        value=random.randbytes(100),
                        partition=i % self.partitions,
                        timestamp=RECENT + i,
                        headers=[("i", str(i).encode())],
                    )
                    break
                except BufferError:
                    producer.poll(0.1)
            i += 1
            if i % step == 0:
                producer.poll(0)
                time.sleep(max(0.0, started + i / self.per_second - time.monotonic()))
        self.written = i
        self.unacknowledged = producer.flush(300)

    def finish(self, after_s: float = 3.0) -> int:
        """Write on for `after_s` more, then stop once every record is acknowledged; how many
        were written."""
        time.sleep(after_s)
        self.finishing.set()
        self.join()
        assert self.unacknowledged == 0, f"{self.unacknowledged} records not acknowledged"
        return self.written


def keep_producing(
    topic: str, records: int, partitions: int, seconds: float, idempotent: bool = False
) -> None:
    """Write `records` numbered records (as `SteadyWriter` does) over about `seconds`, so
    faults land while a copy is going on."""
    writer = SteadyWriter(topic, partitions, records / seconds, idempotent, records)
    writer.run()
    assert writer.unacknowledged == 0
