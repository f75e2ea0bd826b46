"""In-memory stand-ins for the Kafka clients a mirror copier uses (`spark_jobs.copier_clients`),
so that its exactly-once rules are tested without Kafka: a source whose partitions hold given
records, a destination whose partitions grow as a producer's records are delivered (and which
notes, in order, every record handed to a producer and every one delivered), and a slot whose
epoch and control channel a test sets. They answer only the calls a copier makes, as Kafka
would."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from types import SimpleNamespace

from confluent_kafka import KafkaError, TopicPartition

from spark_jobs import copier

TP = tuple[str, int]


@dataclass
class Record:
    """A record as a consumer hands it over (`infra.consuming.Consumed`), or as a delivery
    report names it."""

    _topic: str
    _partition: int
    _offset: int
    _value: bytes | None = None
    _key: bytes | None = None
    _timestamp: int = 1_000

    def error(self) -> None:
        return None

    def topic(self) -> str:
        return self._topic

    def partition(self) -> int:
        return self._partition

    def offset(self) -> int:
        return self._offset

    def key(self) -> bytes | None:
        return self._key

    def value(self) -> bytes | None:
        return self._value

    def headers(self) -> None:
        return None

    def timestamp(self) -> tuple[int, int]:
        return (1, self._timestamp)


class Source:
    """A source cluster: each partition's records, at their offsets (gaps where the log has
    none: compaction, transaction markers)."""

    def __init__(self) -> None:
        self.logs: dict[TP, list[Record]] = {}
        self.arrived = threading.Condition()

    def write(self, topic: str, partition: int, offsets: list[int]) -> None:
        with self.arrived:
            log = self.logs.setdefault((topic, partition), [])
            log += [Record(topic, partition, o, b"v%d" % o, b"k%d" % o, 1_000 + o) for o in offsets]
            self.arrived.notify_all()


class SourceConsumer:
    """A consumer of a `Source` (the calls of `copier_clients.Source`): each assigned partition
    read from its position, in order."""

    def __init__(self, source: Source):
        self.source = source
        self.positions: dict[TP, int] = {}
        self.paused: set[TP] = set()
        self.woken = False
        self.closed = False

    def take(self, n: int, timeout: float) -> list[Record]:
        with self.source.arrived:
            batch = self._read(n)
            if not batch and not self.woken:
                self.source.arrived.wait(timeout)
                batch = self._read(n)
            self.woken = False
            return batch

    def _read(self, n: int) -> list[Record]:
        batch: list[Record] = []
        for tp, position in self.positions.items():
            if tp in self.paused:
                continue
            got = [r for r in self.source.logs.get(tp, []) if r.offset() >= position]
            got = got[: n - len(batch)]
            if got:
                batch += got
                self.positions[tp] = got[-1].offset() + 1
        return batch

    def incremental_assign(self, partitions: list[TopicPartition]) -> None:
        for tp in partitions:
            self.positions[tp.topic, tp.partition] = tp.offset

    def incremental_unassign(self, partitions: list[TopicPartition]) -> None:
        for tp in partitions:
            self.positions.pop((tp.topic, tp.partition), None)

    def pause(self, partitions: list[TopicPartition]) -> None:
        self.paused |= {(tp.topic, tp.partition) for tp in partitions}

    def resume(self, partitions: list[TopicPartition]) -> None:
        self.paused -= {(tp.topic, tp.partition) for tp in partitions}

    def seek(self, partition: TopicPartition) -> None:
        self.positions[partition.topic, partition.partition] = partition.offset

    def position(self, partitions: list[TopicPartition]) -> list[TopicPartition]:
        return [
            TopicPartition(tp.topic, tp.partition, self.positions.get((tp.topic, tp.partition), -1))
            for tp in partitions
        ]

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> None:
        return None

    def wake(self) -> None:
        with self.source.arrived:
            self.woken = True
            self.source.arrived.notify_all()

    def close(self) -> None:
        self.closed = True


@dataclass
class Destination:
    """A destination cluster: each partition's log (key, value, timestamp), and what happened
    to it in order: ("produced", topic, partition, value) when a producer was handed a record,
    ("delivered", topic, partition, value) when it was written."""

    logs: dict[TP, list[tuple[bytes | None, bytes | None, int]]] = field(default_factory=dict)
    events: list[tuple[str, str, int, bytes | None]] = field(default_factory=list)
    refused: set[str] = field(default_factory=set)  # topics whose records fail to be written
    stalled: bool = False  # the brokers answer nothing: records stay queued
    replicas: int = 1

    def end(self, topic: str, partition: int) -> int:
        return len(self.logs.get((topic, partition), []))

    def append(self, topic: str, partition: int, value: bytes) -> None:
        """Another writer's record (not through the copier)."""
        self.logs.setdefault((topic, partition), []).append((None, value, 0))

    def mirrored(self, topic: str, partition: int) -> list[bytes | None]:
        return [value for _, value, _ in self.logs.get((topic, partition), [])]

    def produced(self, topic: str) -> list[bytes | None]:
        return [v for kind, t, _, v in self.events if kind == "produced" and t == topic]


class Producer:
    """confluent-kafka's producer over a `Destination`: records queue until a poll or a flush
    delivers them (none while the destination is stalled); a full queue raises BufferError."""

    def __init__(self, config: dict[str, object], destination: Destination, room: int = 10_000):
        self.config, self.destination, self.room = config, destination, room
        self.queue: list[tuple[str, int, bytes | None, bytes | None, int, object]] = []

    def produce(
        self,
        topic: str,
        value: bytes | None = None,
        key: bytes | None = None,
        partition: int = 0,
        on_delivery: object = None,
        timestamp: int = 0,
        headers: object = None,
    ) -> None:
        if len(self.queue) >= self.room:
            raise BufferError("Local: Queue full")
        self.destination.events.append(("produced", topic, partition, value))
        self.queue.append((topic, partition, key, value, timestamp, on_delivery))

    def poll(self, timeout: float = -1) -> int:
        if self.destination.stalled:
            time.sleep(max(timeout, 0))
            return 0
        delivered, self.queue = self.queue, []
        for topic, partition, key, value, timestamp, on_delivery in delivered:
            report = on_delivery or self.config.get("on_delivery")
            if topic in self.destination.refused:
                if callable(report):
                    report(KafkaError(KafkaError._MSG_TIMED_OUT), Record(topic, partition, -1))
                continue
            log = self.destination.logs.setdefault((topic, partition), [])
            log.append((key, value, timestamp))
            self.destination.events.append(("delivered", topic, partition, value))
            only_errors = self.config.get("delivery.report.only.error")
            if callable(report) and not only_errors:
                report(None, Record(topic, partition, len(log) - 1))
        return len(delivered)

    def flush(self, timeout: float = -1) -> int:
        self.poll(min(timeout, 0.05))
        return len(self.queue)

    def purge(self, in_queue: bool = True, in_flight: bool = True, blocking: bool = True) -> None:
        if in_queue:
            self.queue.clear()

    def __len__(self) -> int:
        return len(self.queue)


class Admin:
    """The destination's admin client (`copier_clients.DestinationAdmin`)."""

    def __init__(self, destination: Destination):
        self.destination = destination

    def offsets(self, partitions: list[TP], at: str | int = "latest") -> dict[TP, int]:
        return {(t, p): self.destination.end(t, p) for t, p in partitions}

    def partition_replicas(self, topic: str) -> list[SimpleNamespace]:
        return [SimpleNamespace(partition=0, replicas=list(range(self.destination.replicas)))]

    def broker_configs(self, names: list[str]) -> dict[str, str | None]:
        return dict.fromkeys(names)


class Slot:
    """What a copier needs of its slot: a test ends its epoch or silences its control channel."""

    def __init__(self) -> None:
        self.ended = False  # the slot's epoch was superseded
        self.contact = True  # it hears from the control channel
        self.unclean_writers = False
        self.written: list[tuple[list[str], bool]] = []  # what `writing` was told

    def in_touch(self) -> bool:
        return self.contact

    def report_soon(self) -> None:
        pass

    def unclean(self, partitions: list[str]) -> bool:
        return self.unclean_writers

    def writing(self, partitions: list[str], cleanly_ended: bool = False) -> None:
        self.written.append((partitions, cleanly_ended))


SPEC = {
    "link_id": "link-1",
    "link_name": "link",
    "source": {"bootstrap.servers": "source:9092"},
    "destination": {"bootstrap.servers": "destination:9092"},
}


def copier_over(
    source: Source, destination: Destination, slot: Slot, room: int = 10_000
) -> copier.Copier:
    """A copier of the link SPEC whose clients are these fakes."""
    return copier.Copier(
        SPEC,
        slot,
        0,
        consumer=lambda config: SourceConsumer(source),
        producer=lambda config: Producer(config, destination, room),
        admin=lambda config: Admin(destination),
    )


def partition(topic: str, number: int = 0, runs: list[list[int]] | None = None) -> dict:
    """An assignment's entry for the mirror of `topic`[number] (same name on both sides)."""
    return {
        "mirror": topic,
        "source": topic,
        "topic_id": f"id-{topic}",
        "partition": number,
        "runs": runs or [],
    }
