"""The durable source→destination offset translation of mirror partitions.

A mirror partition's destination offsets equal its source offsets for as long as the source
offsets it copies are contiguous from 0. Where they are not (the mirror started above offset 0,
compaction or retention removed records, transaction markers and aborted records are skipped),
the writer starts a new *run*: an entry "source offset S was written at destination offset D",
after which source S+i is at destination D+i until the next entry.

Entries live in one topic on the destination cluster, keyed by the mirror topic's id and
partition. The writer appends an entry and waits for it to be stored *before* it writes the
record the entry describes, so a crash can leave an entry ahead of the data but never data
without its entry. A later entry for the same destination offset, or for an earlier one,
replaces the entries at and after it: replay after a crash rewrites them.
"""

from __future__ import annotations

import json
import time
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import Consumer, KafkaError, Message, Producer, TopicPartition

from infra import consuming
from infra.kafka_topics import kafka_id

TOPIC = "_isthmus-offset-translation"


class StoreFailed(RuntimeError):
    """Entries could not be stored."""


@dataclass(frozen=True)
class Entry:
    source: int
    destination: int


def key(topic_id: str, partition: int) -> bytes:
    return f"{topic_id}/{partition}".encode()


def encode(entry: Entry) -> bytes:
    return json.dumps({"source": entry.source, "destination": entry.destination}).encode()


@dataclass
class Runs:
    """The entries of one mirror partition, in destination order."""

    entries: list[Entry] = field(default_factory=list)

    def add(self, entry: Entry) -> None:
        while self.entries and self.entries[-1].destination >= entry.destination:
            self.entries.pop()
        self.entries.append(entry)

    def upto(self, dest_end: int) -> Runs:
        """The runs of a partition whose destination ends at `dest_end`: entries written ahead
        of records that never arrived are dropped, except one for the very next record."""
        return Runs([e for e in self.entries if e.destination <= dest_end])

    def last(self) -> Entry:
        """The run in force at the end: with no entries, offsets are identical from 0."""
        return self.entries[-1] if self.entries else Entry(0, 0)

    @property
    def translated(self) -> bool:
        # Source offsets only ever skip ahead of destination ones, never back.
        last = self.last()
        return last.source != last.destination

    def next_source(self, dest_end: int) -> int:
        """The source offset of the next record to copy into a partition ending at `dest_end`."""
        run = self.last()
        return run.source + (dest_end - run.destination)

    def to_destination(self, source: int) -> int:
        """The destination offset of source offset `source`.

        An offset inside a gap (a record that was never copied) translates to the next copied
        record, as a consumer positioned there would read it next.
        """
        runs = [Entry(0, 0), *self.entries]  # before any entry, offsets are identical
        i = bisect_right([e.source for e in runs], source) - 1
        offset = runs[i].destination + (source - runs[i].source)
        if i + 1 < len(runs):
            offset = min(offset, runs[i + 1].destination)
        return offset


def store(
    config: dict[str, str],
    entries: list[tuple[str, int, Entry]],
    producer: Callable[[dict[str, Any]], Producer] = Producer,
) -> None:
    """Append (topic id, partition, entry) triples and wait until they are stored (by a
    producer `producer` makes: tests may give a fake)."""
    if not entries:
        return
    errors: list[KafkaError] = []

    def delivered(err: KafkaError | None, _: Message) -> None:
        if err is not None:
            errors.append(err)

    writer = producer({**config, "acks": "all", "enable.idempotence": True})
    for topic_id, partition, entry in entries:
        writer.produce(
            TOPIC, key=key(topic_id, partition), value=encode(entry), on_delivery=delivered
        )
    if writer.flush(60) or errors:
        raise StoreFailed(f"Could not store offset translation entries in {TOPIC}: {errors}")


def load(
    config: dict[str, str], topic_ids: set[str], timeout: float = 30.0
) -> dict[tuple[str, int], Runs]:
    """Every partition's runs for the mirror topics in `topic_ids`: {(topic_id, p): Runs}.

    Reads the whole translation topic; a missing topic means no translation yet.
    """
    reader = Reader(config, timeout)
    try:
        return reader.runs(topic_ids)
    finally:
        reader.close()


class Reader:
    """Reads the translation topic and keeps reading it where it stopped: a link application
    asks it for the runs of partitions about to start, without rereading the whole topic."""

    def __init__(self, config: dict[str, str], timeout: float = 30.0):
        self.timeout = timeout
        self.consumer = Consumer(
            {
                **config,
                "group.id": "isthmus-translation-reader",
                "enable.auto.commit": False,
                "isolation.level": "read_committed",
            }
        )
        self.positions: dict[int, int] = {}  # translation topic partition -> next offset
        self.entries: dict[tuple[str, int], Runs] = {}

    def runs(self, topic_ids: set[str]) -> dict[tuple[str, int], Runs]:
        """The runs of every partition of the mirror topics in `topic_ids`, as stored now."""
        self.catch_up()
        return {
            key: Runs(list(runs.entries))
            for key, runs in self.entries.items()
            if key[0] in topic_ids
        }

    def catch_up(self) -> None:
        """Read what was stored since the last call (everything, the first time)."""
        metadata = self.consumer.list_topics(TOPIC, timeout=self.timeout).topics[TOPIC]
        if metadata.error is not None:
            if metadata.error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
                return
            raise RuntimeError(f"Reading {TOPIC}: {metadata.error.str()}")
        ends = {}
        for p in metadata.partitions:
            _, high = self.consumer.get_watermark_offsets(
                TopicPartition(TOPIC, p), timeout=self.timeout
            )
            if high > self.positions.get(p, 0):
                ends[p] = high
        if not ends:
            return
        self.consumer.assign([TopicPartition(TOPIC, p, self.positions.get(p, 0)) for p in ends])
        deadline = time.monotonic() + self.timeout
        while ends:
            msg = consuming.poll(self.consumer, max(0.0, deadline - time.monotonic()))
            if msg is None:
                raise RuntimeError(f"Reading {TOPIC} timed out after {self.timeout:.0f} s.")
            if error := msg.error():
                raise RuntimeError(f"Reading {TOPIC}: {error.str()}")
            self.positions[msg.partition()] = msg.offset() + 1
            if msg.offset() + 1 >= ends.get(msg.partition(), 0):
                ends.pop(msg.partition(), None)
            where, entry = _stored(msg)
            self.entries.setdefault(where, Runs()).add(entry)
        self.consumer.unassign()

    def close(self) -> None:
        self.consumer.close()


def _stored(msg: consuming.Consumed) -> tuple[tuple[str, int], Entry]:
    """A stored entry: the mirror partition (topic id, partition) it is of, and the entry."""
    key, value = msg.key(), msg.value()
    if key is None or value is None:
        raise RuntimeError(f"Reading {TOPIC}: a record without a key or a value")
    topic_id, _, partition = key.decode().rpartition("/")
    stored = json.loads(value)
    # entries written before ids took Kafka's form are keyed by librdkafka's form
    return (kafka_id(topic_id), int(partition)), Entry(stored["source"], stored["destination"])
