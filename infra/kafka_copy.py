"""Copying a range of one partition's records into a partition of another topic on the same
cluster, each record's key, value, headers and timestamp kept (truncate-and-restore's local
copies: the quarantine, and the prefix it keeps)."""

from __future__ import annotations

from collections.abc import Callable

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

Headers = list[tuple[str, bytes]]


def copy_range(
    config: dict[str, str],
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
    `more_headers(offset, timestamp)` adds headers to each; `progress()` is called every 1,000
    records (it may raise to stop the copy). Returns (records, bytes) copied."""
    if end <= start:
        return 0, 0
    consumer = Consumer(
        {
            **config,
            "group.id": f"isthmus-copy-{topic}-{partition}",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
            "enable.partition.eof": True,
        }
    )
    producer = Producer({**config, "enable.idempotence": True, "acks": "all", "linger.ms": 20})
    failures: list[KafkaError] = []
    records = size = 0
    try:
        consumer.assign([TopicPartition(topic, partition, start)])
        position = start
        while position < end:
            msg = consumer.poll(timeout_s)
            if msg is None:
                raise RuntimeError(
                    f"no record of {topic}[{partition}] at offset {position} within {timeout_s} s"
                )
            if msg.error():
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    break  # the rest was transaction markers or compacted away
                raise KafkaException(msg.error())
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
                on_delivery=lambda err, _msg: err is not None and failures.append(err),
            )
            producer.poll(0)
            records += 1
            if records % 1000 == 0:
                progress()
            size += len(msg.key() or b"") + len(msg.value() or b"")
        if producer.flush(timeout_s) or failures:
            raise KafkaException(failures[0] if failures else KafkaError(KafkaError._TIMED_OUT))
    finally:
        consumer.close()
    return records, size
