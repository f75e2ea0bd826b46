"""Taking records from a confluent-kafka consumer without waiting for a full batch."""

from __future__ import annotations

from typing import Protocol, cast

from confluent_kafka import Consumer, KafkaError

Headers = list[tuple[str, str | bytes | None]]  # what a producer takes, and a record holds


class Consumed(Protocol):
    """A record as a consumer hands it over. Its topic, partition and offset are set (the
    client's stubs allow None, which only a message made by hand has); an event (`error()`
    not None) may have none, and is told apart by its error first."""

    def error(self) -> KafkaError | None: ...
    def topic(self) -> str: ...
    def partition(self) -> int: ...
    def offset(self) -> int: ...
    def key(self) -> bytes | None: ...
    def value(self) -> bytes | None: ...
    def headers(self) -> Headers | None: ...
    def timestamp(self) -> tuple[int, int]: ...  # (its type, the timestamp)


def take(consumer: Consumer, n: int, wait: float) -> list[Consumed]:
    """What the consumer holds now, up to `n`; when it holds nothing, the first records to
    come within `wait`, with those that came with them. (A consume of `n` waits for `n`
    records or its whole timeout: reading a few records took the whole timeout, and at
    2,000 records/s a record waited half of it on average.)"""
    batch = consumer.consume(n, 0)
    if batch:
        return cast("list[Consumed]", batch)
    first = poll(consumer, wait)
    return [] if first is None else [first, *cast("list[Consumed]", consumer.consume(n - 1, 0))]


def poll(consumer: Consumer, wait: float) -> Consumed | None:
    """The next record within `wait`, if one comes."""
    return cast("Consumed | None", consumer.poll(wait))
