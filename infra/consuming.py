"""Taking records from a confluent-kafka consumer without waiting for a full batch."""

from __future__ import annotations

from confluent_kafka import Consumer


def take(consumer: Consumer, n: int, wait: float) -> list:
    """What the consumer holds now, up to `n`; when it holds nothing, the first records to
    come within `wait`, with those that came with them. (A consume of `n` waits for `n`
    records or its whole timeout: reading a few records took the whole timeout, and at
    2,000 records/s a record waited half of it on average.)"""
    batch = consumer.consume(n, 0)
    if batch:
        return batch
    first = consumer.poll(wait)
    return [] if first is None else [first, *consumer.consume(n - 1, 0)]
