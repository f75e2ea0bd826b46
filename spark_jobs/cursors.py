"""A mirror copier's partitions (its *cursors*) and what it makes of each batch it reads: which
records to write, at which destination offsets, the translation entries they need first (a
source offset other than the one expected: a gap), and the partitions held at a record whose
schema the destination's registry lacks (`schema_gate`), and how each stands in the copier's
report. Apart from the copier's thread
(`copier`) and its writes (`mirror_writer`) so that this bookkeeping is one small thing, tested
without Kafka."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from confluent_kafka import KafkaError, TopicPartition

from infra.consuming import Consumed

from . import schema_gate, translation
from .copier_clients import Source
from .payloads import PartitionReport

log = logging.getLogger("spark_jobs.copier")  # its lines are the copier's

Chosen = list[tuple["Cursor", Consumed]]  # the records to write, each with its cursor
Gaps = list[tuple["Cursor", translation.Entry]]  # the entries to store before them


@dataclass
class Hold:
    """A partition held at a record whose schema the destination's registry lacks."""

    offset: int  # the source offset of that record
    waiting: dict[int, str]  # schema id: why it waits
    since_ms: int


@dataclass(eq=False)  # one per partition start: compared by identity
class Cursor:
    """One mirror partition the copier copies."""

    mirror: str
    source: str
    topic_id: str
    partition: int
    runs: translation.Runs
    next_source: int  # the source offset expected next
    dest_next: int  # the destination offset the next record gets
    verify: bool = True  # check where the first records after a (re)start land
    hold: Hold | None = None

    @property
    def ident(self) -> tuple[str, str, int]:
        return (self.mirror, self.topic_id, self.partition)


def choose(
    batch: list[Consumed],
    cursors: dict[tuple[str, int], Cursor],
    holds: Holds | None,
    read_error: Callable[[Consumed, KafkaError], None],
) -> tuple[Chosen, Gaps]:
    """The records of `batch` to write, each with its cursor (moved past it), and the gaps
    before them to store. `cursors` by (source topic, partition); `holds`: for a link that
    waits for schemas; `read_error` is told of the consumer's events."""
    chosen: Chosen = []
    gaps: Gaps = []
    find = cursors.get
    for msg in batch:
        if (error := msg.error()) is not None:
            read_error(msg, error)
            continue
        cursor = find((msg.topic(), msg.partition()))
        if cursor is None or cursor.hold is not None:
            continue  # a partition just taken off this copier, or one held for a schema
        offset = msg.offset()
        if offset < cursor.next_source:
            continue  # already in the destination
        if holds is not None:
            ids = schema_gate.schema_ids(msg.key(), msg.value())
            if ids and not ids <= holds.gate.passed and holds.hold(cursor, offset, ids):
                continue
        if offset != cursor.next_source:
            gaps.append((cursor, translation.Entry(offset, cursor.dest_next)))
        cursor.next_source = offset + 1
        cursor.dest_next += 1
        chosen.append((cursor, msg))
    return chosen, gaps


class Holds:
    """A link's partitions held for their schemas (one that syncs schemas: `schema_gate`)."""

    def __init__(self, gate: schema_gate.Gate, consumer: Source, link_id: str):
        self.gate, self.consumer, self.link_id = gate, consumer, link_id
        self.checked = 0.0  # when the held partitions last looked whether their schemas came

    def hold(self, cursor: Cursor, offset: int, ids: set[int]) -> bool:
        """Hold the partition at this record if the destination lacks one of its schemas;
        whether it did."""
        waiting = self.gate.waiting(ids)
        if not waiting:
            return False
        cursor.hold = Hold(offset, waiting, int(time.time() * 1000))
        self.consumer.pause([TopicPartition(cursor.source, cursor.partition)])
        self.checked = time.monotonic()
        log.info(
            "Link %s: %s[%d] holds at source offset %d until the destination's registry has "
            "schema id(s) %s: %s",
            self.link_id,
            cursor.mirror,
            cursor.partition,
            offset,
            ", ".join(map(str, sorted(waiting))),
            "; ".join(dict.fromkeys(waiting.values())),
        )
        return True

    def release(self, held: list[Cursor]) -> None:
        """Let each held partition go on from the record it held at, once its schemas came."""
        self.checked = time.monotonic()
        for cursor in held:
            hold = cursor.hold
            if hold is None:
                continue
            hold.waiting = self.gate.waiting(set(hold.waiting))
            if hold.waiting:
                continue
            log.info(
                "Link %s: %s[%d] goes on from source offset %d: its schemas are in the "
                "destination's registry",
                self.link_id,
                cursor.mirror,
                cursor.partition,
                hold.offset,
            )
            unpause(self.consumer, [cursor], at=True)


def reports(cursors: dict[tuple[str, int], Cursor], consumer: Source) -> dict[str, PartitionReport]:
    """What the copier reports of each partition (built in its thread, which alone changes its
    cursors)."""
    partitions: dict[str, PartitionReport] = {}
    if cursors:
        tps = [TopicPartition(c.source, c.partition) for c in cursors.values()]
        positions = {(tp.topic, tp.partition): tp.offset for tp in consumer.position(tps)}
        for key, c in cursors.items():
            last = c.runs.last()
            partitions[f"{c.partition}/{c.mirror}"] = {
                "run": [last.source, last.destination],
                "translated": c.runs.translated,
                "next_source": c.next_source,
                # A held partition's reader may have fetched past the record it holds at.
                "read_upto": c.next_source
                if c.hold
                else max(positions.get(key, -1), c.next_source),
            }
            if c.hold:
                partitions[f"{c.partition}/{c.mirror}"]["schema_wait"] = {
                    "offset": c.hold.offset,
                    "ids": {str(i): why for i, why in sorted(c.hold.waiting.items())},
                    "since_ms": c.hold.since_ms,
                }
    return partitions


def unpause(consumer: Source, cursors: list[Cursor], at: bool = False) -> None:
    """Resume held partitions (`at`: from the record each held at)."""
    for cursor in cursors:
        if cursor.hold is None:
            continue
        tp = TopicPartition(cursor.source, cursor.partition, cursor.hold.offset)
        if at:
            consumer.seek(tp)
        consumer.resume([tp])
        cursor.hold = None
