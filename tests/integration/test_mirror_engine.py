"""The Spark link stream makes each mirror an exact copy of its source, record by record, on
both copy paths: the batch path (the default) writes every batch byte for byte.

One link and one stream serve every case here, once per path: the mirrors are made first, then
the stream copies them all (and follows a source that grows while it runs).
"""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime
from types import SimpleNamespace

import pytest
from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import NewTopic

from devstack import kafka
from infra.admin_client import AdminClient
from infra.kafka_admin import KafkaAdmin
from infra.processes import wait_for
from replication.engine import supervise
from replication.observe.lag import describe_mirror
from replication.topics.links import alter_link_configs
from replication.topics.mirrors import create_mirror
from spark_jobs.translation import Entry
from tests import leftovers
from tests.conftest import admin_config
from tests.kafka_clients import write_transactions
from tests.mirror_checks import (
    ACTOR,
    assert_exact_copy,
    assert_same_batches,
    committed_link,
    eventually,
    read_all,
    run_until_copied,
    translations,
)

pytestmark = [pytest.mark.integration, pytest.mark.django_db]

RECENT = int(time.time() * 1000) - 600_000  # within the brokers' retention


def _produce(topic: str, records: list[dict], **config) -> None:
    producer = Producer({"bootstrap.servers": kafka.SOURCE.bootstrap, **config})
    errors = []
    for record in records:
        producer.produce(topic, **record, on_delivery=lambda err, _: err and errors.append(err))
    assert producer.flush(30) == 0
    assert not errors, errors[:3]


def _plain(topic: str) -> None:
    _produce(
        topic,
        [
            dict(
                key=f"key-{i}".encode(),
                value=f"value-{i}".encode() * (1 + i % 50),
                partition=i % 3,
                timestamp=RECENT + i,
                headers=[("n", str(i).encode())],
            )
            for i in range(3000)
        ],
    )


def _nulls_and_headers(topic: str) -> None:
    headers = [("h", b"\x00\xff"), ("h", b"second"), ("a", None), ("h", b"")]
    shapes = [
        dict(key=None, value=None),
        dict(key=None, value=b""),
        dict(key=b"", value=None),
        dict(key=b"", value=b""),
        dict(key=b"\x00\x01", value=bytes(range(256)), headers=headers),
        dict(key=b"k", value=b"v", headers=[("h", b"\x01")] * 3),
    ]
    _produce(
        topic,
        [dict(shape, partition=i % 2, timestamp=RECENT + i) for i, shape in enumerate(shapes * 5)],
    )


def _compacted(topic: str) -> None:
    """Records with repeated keys, compacted on the source before the mirror copies them."""
    # The last round writes half the keys again: the round before it keeps a batch with a
    # gap in its offsets, which no broker takes from a client as it is.
    rounds = [
        [
            dict(key=f"k{k}".encode(), value=f"{r}".encode(), timestamp=RECENT + r * 1000)
            for k in range(50 if r < 4 else 25)
        ]
        for r in range(5)
    ]
    for records in rounds:
        _produce(topic, records)
    # Each round's timestamps are a second apart, so the source rolls a segment per round
    # (segment.ms=100) and its cleaner compacts all but the last.
    _produce(topic, [dict(key=b"last", value=b"rolls the segment", timestamp=RECENT + 9000)])
    wait_for(lambda: len(read_all(kafka.SOURCE.bootstrap, topic)) <= 51, 90, interval=2)


def _transactional(topic: str) -> None:
    write_transactions(kafka.SOURCE.bootstrap, topic, RECENT)


def _log_start_above_zero(topic: str) -> None:
    _produce(
        topic,
        [
            dict(key=str(i).encode(), value=b"x", partition=i % 2, timestamp=RECENT + i)
            for i in range(200)
        ],
    )
    admin = AdminClient({"bootstrap.servers": kafka.SOURCE.bootstrap})
    futures = admin.delete_records([TopicPartition(topic, 0, 40), TopicPartition(topic, 1, 7)])
    for future in futures.values():
        future.result(30)


def _compressed(codec: str):
    """Batches of about a hundred records each, compressed with `codec` by an idempotent
    producer."""

    def fill(topic: str) -> None:
        _produce(
            topic,
            [
                dict(
                    key=f"key-{i}".encode(),
                    value=f"value {i} of {codec} ".encode() * (1 + i % 20),
                    partition=i % 2,
                    timestamp=RECENT + i,
                    headers=[("codec", codec.encode())],
                )
                for i in range(1000)
            ],
            **{"compression.type": codec, "enable.idempotence": True, "batch.num.messages": 100},
        )

    return fill


def _log_append_time(topic: str) -> None:
    _produce(topic, [dict(key=b"k", value=str(i).encode()) for i in range(20)])


CASES = {
    "plain": (3, {}, _plain),
    "nulls": (2, {}, _nulls_and_headers),
    "compacted": (
        1,
        {
            "cleanup.policy": "compact",
            "segment.ms": "100",
            "min.cleanable.dirty.ratio": "0.01",
            "min.compaction.lag.ms": "0",
        },
        _compacted,
    ),
    "transactional": (2, {}, _transactional),
    "log-start": (2, {}, _log_start_above_zero),
    "log-append-time": (1, {"message.timestamp.type": "LogAppendTime"}, _log_append_time),
    "growing": (1, {}, lambda topic: None),
    **{codec: (2, {}, _compressed(codec)) for codec in ("gzip", "snappy", "lz4", "zstd")},
}


def _grow_while_written(topic: str, mirror_topic: str) -> None:
    """Write to a one-partition source; once the stream copies it, grow it to 8 partitions
    and keep writing to all of them."""
    _produce(topic, [dict(value=f"a{i}".encode(), timestamp=RECENT + i) for i in range(300)])
    destination = KafkaAdmin({"bootstrap.servers": kafka.DESTINATION.bootstrap})
    eventually(lambda: destination.end_offsets(mirror_topic, 1)[0], 240, "the first copy")
    source = KafkaAdmin({"bootstrap.servers": kafka.SOURCE.bootstrap})
    source.create_partitions(topic, 8)
    eventually(lambda: source.describe_topic(topic).partitions == 8, 30, "8 source partitions")
    for round_ in range(10):
        _produce(
            topic,
            [
                dict(value=f"b{round_}-{i}".encode(), partition=i % 8, timestamp=RECENT + i)
                for i in range(80)
            ],
        )
        time.sleep(0.3)


@pytest.fixture(scope="module", params=["BATCH", "RECORD"], ids=["batch-path", "record-path"])
def engine(request, devstack, django_db_setup, django_db_blocker):
    source_admin = AdminClient(admin_config(kafka.SOURCE))
    names = {case: leftovers.unique_name(f"engine-{case}") for case in CASES}
    for case, (partitions, config, _) in CASES.items():
        topic = names[case]
        source_admin.create_topics([NewTopic(topic, partitions, 1, config=config)])[topic].result(
            30
        )
    for case, (_, _, fill) in CASES.items():
        fill(names[case])
    path = {"mirror.copy.path": request.param}
    with (
        committed_link(django_db_blocker, list(names.values()), path) as link,
        django_db_blocker.unblock(),
    ):
        mirrors = {case: create_mirror(ACTOR, link, names[case]) for case in CASES}
        grower = threading.Thread(
            target=_grow_while_written, args=(names["growing"], names["growing"])
        )
        grower.start()
        try:
            while grower.is_alive():
                supervise.supervise(link)
                time.sleep(1)
            run_until_copied(link, list(mirrors.values()))
        finally:
            grower.join()
        yield SimpleNamespace(link=link, mirrors=mirrors, names=names, path=request.param)


def _modes(mirror) -> set[str]:
    return {p.offset_mode for p in describe_mirror(mirror).partitions}


def test_a_plain_topic_is_copied_with_identical_offsets(engine):
    source = assert_exact_copy(engine.names["plain"], engine.names["plain"])
    assert len(source) == 3000
    assert _modes(engine.mirrors["plain"]) == {"IDENTICAL"}
    assert translations(engine.names["plain"]) == {}


def test_null_and_empty_keys_and_values_and_binary_repeated_headers_are_kept(engine):
    source = assert_exact_copy(engine.names["nulls"], engine.names["nulls"])
    shapes = {(r.key, r.value) for r in source}
    assert {(None, None), (None, b""), (b"", None), (b"", b"")} <= shapes
    with_headers = [r.headers for r in source if r.key == b"\x00\x01"]
    assert with_headers[0] == [("h", b"\x00\xff"), ("h", b"second"), ("a", None), ("h", b"")]


def test_a_compacted_topic_is_copied_with_translated_offsets(engine):
    source = assert_exact_copy(engine.names["compacted"], engine.names["compacted"])
    offsets = [r.offset for r in source]
    assert offsets != list(range(len(offsets))), "the source was not compacted"
    mirror = read_all(kafka.DESTINATION.bootstrap, engine.names["compacted"])
    assert [r.offset for r in mirror] == list(range(len(mirror)))
    assert _modes(engine.mirrors["compacted"]) == {"TRANSLATED"}


def test_a_transactional_topic_is_copied_committed_only_without_markers(engine):
    source = assert_exact_copy(engine.names["transactional"], engine.names["transactional"])
    assert {r.value for r in source} == {b"committed"}
    mirror = read_all(kafka.DESTINATION.bootstrap, engine.names["transactional"])
    assert len(mirror) == 80  # four committed transactions of 20
    for p in (0, 1):  # no markers and no aborted records take offsets in the mirror
        assert [r.offset for r in mirror if r.partition == p] == list(range(40))
    assert all(p.lag == 0 for p in describe_mirror(engine.mirrors["transactional"]).partitions)


def test_a_source_whose_log_starts_above_zero_is_copied_from_its_log_start(engine):
    source = assert_exact_copy(engine.names["log-start"], engine.names["log-start"])
    assert [r.offset for r in source if r.partition == 0][0] == 40
    runs = translations(engine.names["log-start"])
    assert runs[0].entries[0].source == 40 and runs[0].entries[0].destination == 0
    assert runs[1].to_destination(7) == 0
    assert _modes(engine.mirrors["log-start"]) == {"TRANSLATED"}


def test_a_log_append_time_source_gets_the_mirrors_own_append_time(engine):
    source = read_all(kafka.SOURCE.bootstrap, engine.names["log-append-time"])
    mirror = read_all(kafka.DESTINATION.bootstrap, engine.names["log-append-time"])
    assert [(r.offset, r.key, r.value) for r in mirror] == [
        (r.offset, r.key, r.value) for r in source
    ]
    for s, m in zip(source, mirror, strict=True):
        assert m.timestamp[0] == s.timestamp[0] == 2  # TIMESTAMP_LOG_APPEND_TIME
        assert m.timestamp[1] >= s.timestamp[1]


def test_compressed_batches_are_copied_record_for_record(engine):
    for codec in ("gzip", "snappy", "lz4", "zstd"):
        source = assert_exact_copy(engine.names[codec], engine.names[codec])
        assert len(source) == 1000
        assert _modes(engine.mirrors[codec]) == {"IDENTICAL"}


def test_the_batch_path_writes_every_batch_byte_for_byte(engine):
    """Same boundaries, codec and records section; only the producer's fields, the
    transactional bit and the CRC are the mirror's own. A compacted batch with gaps (which no
    broker takes from a client) and a LogAppendTime batch are written again, record for
    record."""
    if engine.path != "BATCH":
        pytest.skip("the record path writes batches of its own")
    whole = ["plain", "nulls", "gzip", "snappy", "lz4", "zstd", "transactional", "growing"]
    for case in whole:
        compared, total = assert_same_batches(engine.names[case], engine.names[case])
        assert compared == total > 0, case
    compared, total = assert_same_batches(engine.names["compacted"], engine.names["compacted"])
    assert 0 < compared < total  # the half-compacted batch was built again
    compared, total = assert_same_batches(engine.names["log-start"], engine.names["log-start"])
    assert compared >= total - 2  # the batch each partition starts inside of is built again
    compared, total = assert_same_batches(
        engine.names["log-append-time"], engine.names["log-append-time"]
    )
    assert compared == 0 < total


def test_a_source_growing_from_one_to_eight_partitions_while_written_is_copied(engine):
    source = assert_exact_copy(engine.names["growing"], engine.names["growing"])
    assert {r.partition for r in source} == set(range(8))
    assert len(source) == 300 + 800
    destination = KafkaAdmin(admin_config(kafka.DESTINATION))
    assert destination.describe_topic(engine.names["growing"]).partitions == 8


def test_mirrors_start_at_the_latest_offset_or_at_a_time_when_asked(django_db_blocker):
    at_latest, at_time = (leftovers.unique_name(f"engine-{at}") for at in ("latest", "at-time"))
    source_admin = AdminClient(admin_config(kafka.SOURCE))
    for topic in (at_latest, at_time):
        source_admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(30)
        _produce(
            topic, [dict(value=b"old", partition=i % 2, timestamp=RECENT + i) for i in range(100)]
        )
    later = RECENT + 10_000  # records from here on are "new"
    _produce(at_time, [dict(value=b"new", partition=i % 2, timestamp=later + i) for i in range(20)])
    spec = {"mirror.start.offset.spec": "latest"}
    with committed_link(django_db_blocker, [at_latest, at_time], spec) as link:
        mirrors = [create_mirror(ACTOR, link, at_latest)]
        when = datetime.fromtimestamp(later / 1000, UTC).isoformat()
        alter_link_configs(ACTOR, link, {"mirror.start.offset.spec": when}, [])
        mirrors.append(create_mirror(ACTOR, link, at_time))
        _produce(
            at_latest, [dict(value=b"new", partition=i % 2, timestamp=later + i) for i in range(20)]
        )
        run_until_copied(link, mirrors)
        for topic in (at_latest, at_time):
            mirror = read_all(kafka.DESTINATION.bootstrap, topic)
            assert [(r.partition, r.offset, r.value) for r in mirror] == [
                (p, o, b"new") for p in (0, 1) for o in range(10)
            ]
            runs = translations(topic)
            assert [runs[p].entries for p in (0, 1)] == [[Entry(50, 0)], [Entry(50, 0)]]
        assert _modes(mirrors[0]) == {"TRANSLATED"}
