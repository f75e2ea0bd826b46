"""Reading a source topic and its mirror whole, and proving the mirror an exact copy."""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition
from django.conf import settings

from devstack import kafka
from infra import consuming, kafka_wire, record_batches
from infra.kafka_admin import KafkaAdmin
from infra.kafka_errors import KafkaAdminError
from infra.processes import wait_for
from replication.core import read_only
from replication.engine import process, supervise
from replication.governance import audit
from replication.kafka.clusters import register_cluster
from replication.models import AuditEvent, ClusterLink, KafkaCluster, MirrorTopic
from replication.observe.lag import describe_mirror
from replication.topics.link_creation import create_link
from spark_jobs import translation
from tests import leftovers
from tests.conftest import admin_config

ACTOR = audit.Actor.system("tests")


@dataclass(frozen=True)
class Record:
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: list | None
    timestamp: tuple[int, int]  # (type, ms)


def read_all(bootstrap: str, topic: str) -> list[Record]:
    """Every committed record of `topic`, in partition and offset order."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": leftovers.unique_name("reader"),
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "isolation.level": "read_committed",
        }
    )
    try:
        partitions = list(consumer.list_topics(topic, timeout=10).topics[topic].partitions)
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
        pending, records = set(partitions), []
        deadline = time.monotonic() + 120
        while pending and time.monotonic() < deadline:
            for msg in consuming.take(consumer, 10_000, 1.0):
                if msg.error():
                    if msg.error().code() == KafkaError._PARTITION_EOF:
                        pending.discard(msg.partition())
                    continue
                records.append(
                    Record(
                        msg.partition(),
                        msg.offset(),
                        msg.key(),
                        msg.value(),
                        msg.headers(),
                        msg.timestamp(),
                    )
                )
        assert not pending, f"reading {topic} timed out"
    finally:
        consumer.close()
    return sorted(records, key=lambda r: (r.partition, r.offset))


def raw_batches(
    bootstrap: str, topic: str
) -> dict[int, tuple[list[record_batches.Batch], list[tuple[int, int]]]]:
    """Every record batch of `topic` from its log start up to its last stable offset, by
    partition, as the broker holds it (markers and aborted transactions' batches among them),
    with the aborted transactions the broker names among them."""
    settings_ = kafka_wire.Settings.of({"bootstrap.servers": bootstrap})
    connection = kafka_wire.Connection(bootstrap, settings_)
    try:
        partitions = sorted(kafka_wire.metadata(connection, [topic]).leaders)
        starts = kafka_wire.list_offsets(connection, partitions, -2)
        found: dict[int, tuple[list[record_batches.Batch], list[tuple[int, int]]]] = {}
        for tp in partitions:
            offset, (batches, aborted) = starts[tp][0], found.setdefault(tp[1], ([], []))
            while True:
                request = kafka_wire.fetch_request({tp: offset}, 0, 8 << 20, 8 << 20)
                connection.send(request, kafka_wire.FETCH_RESPONSE, kafka_wire.FETCH_VERSION)
                part = next(kafka_wire.fetched(connection.receive_raw()[2]))
                fresh = [b for b in record_batches.batches(part.records) if b.last >= offset]
                if not fresh:
                    break
                batches += fresh
                aborted += [a for a in part.aborted if a not in aborted]
                offset = fresh[-1].last + 1
    finally:
        connection.close()
    return found


def assert_same_batches(source_topic: str, mirror_topic: str) -> tuple[int, int]:
    """Every batch a `read_committed` reader keeps of the source is in the mirror, in order,
    byte for byte from its attributes through its records but for the producer's fields, the
    transactional bit and the CRC; a batch Kafka takes from no client as it is (a compacted
    one's gaps, LogAppendTime) or one the mirror starts inside of holds the same records (see
    `assert_exact_copy`) in a batch built again. How many batches were compared byte for
    byte, of how many."""
    source = raw_batches(kafka.SOURCE.bootstrap, source_topic)
    mirror = raw_batches(kafka.DESTINATION.bootstrap, mirror_topic)
    compared = total = 0
    for partition, (batches, aborted) in source.items():
        kept = [
            b for b, keep in record_batches.committed(iter(batches), aborted) if keep and b.count
        ]
        copies = mirror[partition][0]
        assert len(copies) == len(kept), (partition, len(copies), len(kept))
        total += len(kept)
        for i, (s, m) in enumerate(zip(kept, copies, strict=True)):
            assert not m.transactional and not m.control
            if s.writable and m.count == s.count:
                assert _as_written(m) == _as_written(s), f"{mirror_topic}[{partition}] batch {i}"
                compared += 1
    return compared, total


def _as_written(batch: record_batches.Batch) -> bytes:
    """A batch from its attributes through its records, without what the writer owns."""
    view = batch.view
    attributes = view[22] & ~record_batches.TRANSACTIONAL & 0xFF
    return bytes([view[21], attributes]) + bytes(view[23:43]) + bytes(view[57:])


def translations(mirror_topic: str) -> dict[int, translation.Runs]:
    admin = KafkaAdmin({"bootstrap.servers": kafka.DESTINATION.bootstrap})
    topic_id = admin.describe_topic(mirror_topic).topic_id
    runs = translation.load({"bootstrap.servers": kafka.DESTINATION.bootstrap}, {topic_id})
    return {p: r for (_, p), r in runs.items()}


def assert_exact_copy(source_topic: str, mirror_topic: str) -> list[Record]:
    """The mirror holds every committed source record once, in order, with the same partition,
    key, value, headers and timestamp, at the offset the durable translation gives (the same
    offset where none is recorded). Returns the source records."""
    source = read_all(kafka.SOURCE.bootstrap, source_topic)
    mirror = read_all(kafka.DESTINATION.bootstrap, mirror_topic)
    runs = translations(mirror_topic)
    expected = [
        Record(
            r.partition,
            runs[r.partition].to_destination(r.offset) if r.partition in runs else r.offset,
            r.key,
            r.value,
            r.headers,
            r.timestamp,
        )
        for r in source
    ]
    assert len(mirror) == len(expected), (len(mirror), len(expected))
    for want, got in zip(expected, mirror, strict=True):
        assert got == want, f"mirror record {got} differs from source record {want}"
    return source


def eventually(check, timeout: float, what: str):
    """Wait until `check()` answers something true, and return it."""
    result = wait_for(check, timeout, ignore=())
    if not result:
        raise AssertionError(f"{what} did not happen within {timeout} s")
    return result


def topic_gone(node: kafka.KafkaNode, topic: str, timeout: float = 60) -> None:
    """Wait until the cluster lists `topic` no more (a broker may be a moment behind its
    controller after a delete)."""
    admin = KafkaAdmin(admin_config(node))
    eventually(lambda: topic not in admin.list_topic_names(), timeout, f"{topic} gone")


def caught_up(mirror: MirrorTopic) -> bool:
    """Whether the mirror, as it is in the database now, has lag 0 on every partition."""
    status = describe_mirror(MirrorTopic.objects.get(pk=mirror.pk))
    return not status.errors and all(p.lag == 0 for p in status.partitions)


def run_until_copied(link: ClusterLink, mirrors: list[MirrorTopic], timeout: float = 240) -> None:
    """Supervise the link's stream, as the beat does, until every mirror has lag 0."""
    statuses = []

    def copied() -> bool:
        supervise.supervise(link)
        statuses[:] = [describe_mirror(m) for m in mirrors]
        return all(
            s.partitions
            and not s.errors
            and all(p.lag == 0 and p.last_fetch_source_high_watermark >= 0 for p in s.partitions)
            for s in statuses
        )

    if not wait_for(copied, timeout, 1, ignore=()):
        log = process.log_file()
        tail = log.read_text()[-3000:] if log.exists() else "no log"
        raise AssertionError(f"not copied in {timeout} s: {statuses}\n{tail}")


def committed_id(node: kafka.KafkaNode) -> str:
    return kafka.cluster_id_on_disk(node, settings.VAR_DIR) or ""


@contextlib.contextmanager
def committed_link(
    django_db_blocker, topics: list[str], configs: dict[str, str] | None = None
) -> Iterator[ClusterLink]:
    """A link from the source to the destination, committed so a whole module (and a Celery
    worker) sees it. Afterwards its stream is stopped, and it, its clusters and `topics` (on
    both clusters) are gone."""
    suffix = uuid.uuid4().hex[:6]
    with django_db_blocker.unblock():
        audited_before = AuditEvent.objects.order_by("-id").values_list("id", flat=True).first()
        clusters, made = {}, []
        for node in kafka.NODES:
            # A cluster is registered once: a committed link of the module's holds it already.
            found = KafkaCluster.objects.filter(cluster_id=committed_id(node)).first()
            if found is None:
                config = admin_config(node)
                bootstrap = config.pop("bootstrap.servers")
                found = register_cluster(ACTOR, f"{node.name}-{suffix}", bootstrap, config)
                made.append(found)
            clusters[node.name] = found
        link = create_link(
            ACTOR,
            clusters["destination"],
            f"link-{suffix}",
            {"bootstrap.servers": kafka.SOURCE.bootstrap, **(configs or {})},
        )
        try:
            yield link
        finally:
            supervise.stop(link)
            for node in kafka.NODES:
                admin = KafkaAdmin(admin_config(node), timeout=10)
                for topic in topics:
                    with contextlib.suppress(KafkaAdminError):
                        admin.delete_topic(topic)
                    if node is kafka.DESTINATION:
                        read_only.lift(admin, topic)
            link.delete()
            for cluster in made:
                cluster.delete()
            # Other modules' tests look for their own audit events.
            AuditEvent.plain.filter(id__gt=audited_before or 0).delete()
