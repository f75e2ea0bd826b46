"""Record-level work on one partition with Kafka's own clients: copying a range into another
topic on the same cluster, each record's key, value, headers and timestamp kept
(truncate-and-restore's local copies: the quarantine, and the prefix it keeps), placeholders
that move a new partition's offsets on, whether a range holds any committed record (a reverse
over transaction markers), the first records of a topic (a quarantine reviewed), the timestamp of
the record at an offset of many partitions at once (a mirror's lag in time), and ranges of many
partitions read at once (a mirror compared with its source)."""

from __future__ import annotations

import time
from collections.abc import Callable, Container, Iterator
from dataclasses import dataclass
from functools import partial

from confluent_kafka import (
    OFFSET_BEGINNING,
    TIMESTAMP_LOG_APPEND_TIME,
    TIMESTAMP_NOT_AVAILABLE,
    Consumer,
    KafkaError,
    KafkaException,
    Message,
    Producer,
    TopicPartition,
)

from . import consuming
from .consuming import Consumed

Headers = list[tuple[str, bytes]]


def _note_failure(failures: list[KafkaError], err: KafkaError | None, _: Message) -> None:
    """A delivery report: a record that failed is noted in `failures`."""
    if err is not None:
        failures.append(err)


def _reader(config: dict[str, str], group: str, committed: bool = True) -> Consumer:
    """A consumer of committed records only (with `committed` False, of every record but
    transaction markers), assigned (the group is never joined), starting at the log start when
    its offset is gone (a start retention took)."""
    return Consumer(
        {
            **config,
            "group.id": group,
            "enable.auto.commit": False,
            "isolation.level": "read_committed" if committed else "read_uncommitted",
            "enable.partition.eof": True,
            "auto.offset.reset": "earliest",
        }
    )


class Records:
    """Record-level work on one cluster, by its client config: what
    `replication.kafka.connections.records` gives the domain (the database tests choose an in-memory
    one with the setting ISTHMUS_KAFKA_RECORDS)."""

    def __init__(self, config: dict[str, str]):
        self.config = config

    def copy_range(
        self,
        topic: str,
        partition: int,
        start: int,
        end: int,
        target: str,
        more_headers: Callable[[int, int], Headers] = lambda offset, timestamp: [],
        timeout_s: float = 60,
        progress: Callable[[], None] = lambda: None,
    ) -> tuple[int, int]:
        """Copy the committed records of `topic`[`partition`] at offsets `start` <= o < `end` into
        `target`[`partition`], in order, once each (idempotent producer, all in-sync replicas);
        `more_headers(offset, timestamp)` adds headers to each; `progress()` is called before each
        record and at least every second while waiting (it may raise to stop the copy). Returns
        (records, bytes) copied."""
        if end <= start:
            return 0, 0
        consumer = _reader(self.config, f"isthmus-copy-{topic}-{partition}")
        producer = Producer(
            {**self.config, "enable.idempotence": True, "acks": "all", "linger.ms": 20}
        )
        failures: list[KafkaError] = []
        records = size = 0
        try:
            consumer.assign([TopicPartition(topic, partition, start)])
            position, waited_since = start, time.monotonic()
            while position < end:
                progress()  # (cheap: the caller's lease asks Redis at most once a second)
                msg = consuming.poll(consumer, 1.0)
                if msg is None:
                    if time.monotonic() - waited_since > timeout_s:
                        raise RuntimeError(
                            f"no record of {topic}[{partition}] at offset {position} within "
                            f"{timeout_s:.0f} s"
                        )
                    continue
                waited_since = time.monotonic()
                if error := msg.error():
                    if error.code() == KafkaError._PARTITION_EOF:
                        break  # the rest was transaction markers or compacted away
                    raise KafkaException(error)
                if msg.offset() >= end:
                    break
                position = msg.offset() + 1
                _, timestamp = msg.timestamp()
                producer.produce(
                    target,
                    key=msg.key(),
                    value=msg.value(),
                    partition=partition,
                    timestamp=timestamp,
                    headers=[*(msg.headers() or []), *more_headers(msg.offset(), timestamp)],
                    on_delivery=partial(_note_failure, failures),
                )
                producer.poll(0)
                records += 1
                size += len(msg.key() or b"") + len(msg.value() or b"")
            if producer.flush(timeout_s) or failures:
                raise KafkaException(failures[0] if failures else KafkaError(KafkaError._TIMED_OUT))
        finally:
            consumer.close()
        return records, size

    def placeholders(
        self,
        topic: str,
        partition: int,
        count: int,
        progress: Callable[[], None] = lambda: None,
    ) -> None:
        """Write `count` empty records (an empty key, so a compacted topic takes them too) to
        `topic`[`partition`]: deleted right after, they only move its offsets on, so the records
        written next land at the offsets they must have. `progress()` as in `copy_range`."""
        if count <= 0:
            return
        producer = Producer(
            {
                **self.config,
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": 20,
                "batch.size": 1_000_000,
                "queue.buffering.max.messages": 1_000_000,
            }
        )
        failures: list[KafkaError] = []
        for i in range(count):
            while True:
                try:
                    producer.produce(
                        topic,
                        key=b"",
                        partition=partition,
                        on_delivery=partial(_note_failure, failures),
                    )
                    break
                except BufferError:  # the local queue is full: let deliveries drain it
                    producer.poll(0.1)
            if i % 10_000 == 0:
                producer.poll(0)
                progress()
        if producer.flush(60) or failures:
            raise KafkaException(failures[0] if failures else KafkaError(KafkaError._TIMED_OUT))

    def holds_records(
        self, topic: str, partition: int, start: int, end: int, timeout_s: float = 30
    ) -> bool:
        """Whether `topic`[`partition`] holds a committed record at an offset `start` <= o < `end`
        (transaction markers and aborted records are not records)."""
        if end <= start:
            return False
        consumer = _reader(self.config, f"isthmus-check-{topic}-{partition}")
        try:
            consumer.assign([TopicPartition(topic, partition, start)])
            deadline = time.monotonic() + timeout_s
            while time.monotonic() < deadline:
                msg = consuming.poll(consumer, 1.0)
                if msg is None:
                    continue
                if error := msg.error():
                    if error.code() == KafkaError._PARTITION_EOF:
                        return False
                    raise KafkaException(error)
                return msg.offset() < end
            raise KafkaException(KafkaError(KafkaError._TIMED_OUT, f"reading {topic}[{partition}]"))
        finally:
            consumer.close()

    def first_timestamps(
        self, positions: dict[tuple[str, int], int], timeout_s: float = 5
    ) -> dict[tuple[str, int], int | None]:
        """The timestamp (epoch ms) of the first committed record at or after the offset of each
        (topic, partition) in `positions`, all read by one consumer that fetches little more than
        that record of each: None where no committed record follows the offset (transaction
        markers, aborted or compacted records), -1 where the record carries no timestamp (an
        old message format). A partition not answered within `timeout_s` is left out."""
        found: dict[tuple[str, int], int | None] = {}
        if not positions:
            return found
        # A broker still returns a whole first batch, however small the bound.
        consumer = _reader({**self.config, "max.partition.fetch.bytes": "4096"}, "isthmus-lag")
        waiting = dict(positions)
        try:
            consumer.assign([TopicPartition(t, p, o) for (t, p), o in waiting.items()])
            deadline = time.monotonic() + timeout_s
            while waiting and (left := deadline - time.monotonic()) > 0:
                for tp, msg in _taken(consumer, waiting, len(waiting), min(left, 1.0)):
                    if msg is None:
                        found[tp] = None
                    else:
                        kind, timestamp = msg.timestamp()
                        found[tp] = -1 if kind == TIMESTAMP_NOT_AVAILABLE else timestamp
                    consumer.pause([TopicPartition(*tp)])
                    del waiting[tp]
        finally:
            consumer.close()
        return found

    def read_ranges(
        self,
        ranges: dict[tuple[str, int], tuple[int, int]],
        *,
        committed: bool = True,
        timeout_s: float = 30,
    ) -> dict[tuple[str, int], list[Record]]:
        """`read_ranges` on this cluster."""
        return read_ranges(self.config, ranges, committed=committed, timeout_s=timeout_s)

    def read_head(
        self,
        topic: str,
        partitions: int,
        limit: int,
        timeout_s: float = 30,
        max_bytes: int | None = None,
    ) -> list[Consumed]:
        """Up to `limit` committed records of `topic` from the start of each of its `partitions`
        (confluent-kafka messages), in partition and offset order; with `max_bytes`, no more
        once those read hold that many bytes of keys, values and headers (`record_size`)."""
        consumer = _reader(self.config, f"isthmus-read-{topic}")
        found: list[Consumed] = []
        ended: set[int] = set()
        held = 0
        try:
            consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
            deadline = time.monotonic() + timeout_s
            while len(ended) < partitions and len(found) < limit and time.monotonic() < deadline:
                if max_bytes is not None and held >= max_bytes:
                    break
                msg = consuming.poll(consumer, 1.0)
                if msg is None:
                    continue
                if error := msg.error():
                    if error.code() != KafkaError._PARTITION_EOF:
                        raise KafkaException(error)
                    ended.add(msg.partition())
                    continue
                found.append(msg)
                held += record_size(msg)
        finally:
            consumer.close()
        return sorted(found, key=lambda m: (m.partition(), m.offset()))


def record_size(msg: Consumed) -> int:
    """The bytes of a record's key, value and headers (names and values)."""
    try:
        headers = msg.headers() or ()
    except UnicodeDecodeError:  # a name that is not UTF-8: the client cannot give them
        headers = ()
    carried = sum(len(name.encode()) + len(value or b"") for name, value in headers)
    return len(msg.key() or b"") + len(msg.value() or b"") + carried


def _taken(
    consumer: Consumer, wanted: Container[tuple[str, int]], n: int, wait: float
) -> Iterator[tuple[tuple[str, int], Consumed | None]]:
    """What the consumer holds now (`consuming.take`) of the partitions still `wanted`, each
    (topic, partition) with its record, or with None where the partition reached its end; any
    other error raised."""
    for msg in consuming.take(consumer, n, wait):
        tp = (msg.topic(), msg.partition())
        if tp not in wanted:
            continue
        if error := msg.error():
            if error.code() != KafkaError._PARTITION_EOF:
                raise KafkaException(error)
            yield tp, None
        else:
            yield tp, msg


@dataclass(frozen=True)
class Record:
    """One record as a consumer reads it; `log_append_time`: the broker stamped its timestamp."""

    offset: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, str | bytes | None], ...]
    timestamp: int
    log_append_time: bool = False


def read_ranges(
    config: dict[str, str],
    ranges: dict[tuple[str, int], tuple[int, int]],
    *,
    committed: bool = True,
    timeout_s: float = 30,
) -> dict[tuple[str, int], list[Record]]:
    """The records at offsets `start` <= o < `end` of each (topic, partition) in `ranges`, read
    by one consumer; committed ones only unless `committed` is False. A partition whose log
    ends before `end` (transaction markers, compaction) gives what it has."""
    wanted = {tp: r for tp, r in ranges.items() if r[1] > r[0]}
    found: dict[tuple[str, int], list[Record]] = {tp: [] for tp in ranges}
    if not wanted:
        return found
    consumer = _reader(config, "isthmus-verify", committed)
    try:
        consumer.assign([TopicPartition(t, p, start) for (t, p), (start, _) in wanted.items()])
        deadline = time.monotonic() + timeout_s
        while wanted:
            if time.monotonic() > deadline:
                (topic, partition), (start, end) = next(iter(wanted.items()))
                raise KafkaException(
                    KafkaError(
                        KafkaError._TIMED_OUT,
                        f"reading {topic}[{partition}] offsets {start} to {end - 1} took longer "
                        f"than {timeout_s:.0f} s",
                    )
                )
            for tp, msg in _taken(consumer, wanted, 1000, 1.0):
                if msg is None or msg.offset() >= wanted[tp][1]:
                    del wanted[tp]
                    continue
                kind, timestamp = msg.timestamp()
                found[tp].append(
                    Record(
                        msg.offset(),
                        msg.key(),
                        msg.value(),
                        tuple(msg.headers() or ()),
                        timestamp,
                        kind == TIMESTAMP_LOG_APPEND_TIME,
                    )
                )
                if msg.offset() + 1 >= wanted[tp][1]:
                    del wanted[tp]
    finally:
        consumer.close()
    return found
