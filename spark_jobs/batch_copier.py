"""The batch path: a link's copier that copies record batches as they are, without decoding
them (docs/mirror-engine.md, "The batch path").

It is the record path's copier (`copier.Copier`: assignments, starts from the destination's
end and the translation, settling, resets, reports) with another reader and writer: batches
fetched raw from the source's partition leaders (`batch_source`), chosen here, and produced to
the mirror partitions' leaders with this copier's producer id (`batch_writer`). A batch is
written byte for byte from its attributes through its records; one Kafka would refuse from a
client as it is (a compacted batch's gaps, a LogAppendTime batch) or one a partition starts
inside of is decoded and its records written in a batch built again, as the record path would
write them. Transaction markers and aborted transactions' batches are skipped, as a
`read_committed` consumer skips them; the gaps they leave are translated as the record path's
are.

`path(spec)` says which path a link's copier takes, and why a link asked for the batch path
stays on the record path.
"""

from __future__ import annotations

import math
import time
from typing import Any

from infra import kafka_wire, record_batches
from infra.kafka_wire import Fetched, Settings

from . import payloads, translation
from .batch_source import BatchSource
from .batch_writer import BatchWriter, Out
from .copier import Copier
from .cursors import Cursor, Gaps

BATCH, RECORD = "batch", "record"


def path(spec: payloads.LinkSpec) -> tuple[str, str]:
    """The path a link's copier takes, and why it is not the one the link asks for ("" when
    it is)."""
    if spec.get("path", BATCH) == RECORD:
        return RECORD, ""
    if spec.get("schemas"):
        return RECORD, (
            "schema linking holds each record until the destination has its schema, which "
            "only the record path reads"
        )
    for side in ("source", "destination"):
        why = Settings.unsupported(spec[side])
        if why:
            return RECORD, f"the batch path does not speak the {side}'s {why}"
    return BATCH, ""


def copier_for(spec: payloads.LinkSpec) -> type[Copier]:
    return BatchCopier if path(spec)[0] == BATCH else Copier


def choose(
    fetched: list[Fetched], cursors: dict[tuple[str, int], Cursor], source: BatchSource
) -> tuple[list[Out], Gaps]:
    """The batches of `fetched` to write, each with its cursor (moved past it), and the gaps
    before them to store; each partition's next fetch moved past what was taken of it."""
    chosen: list[Out] = []
    gaps: Gaps = []
    for part in fetched:
        cursor = cursors.get((part.topic, part.partition))
        if cursor is None:
            continue  # just taken off this copier
        end = None
        for batch, kept in record_batches.committed(
            record_batches.batches(part.records), part.aborted
        ):
            end = batch.last + 1
            if kept and batch.count and batch.last >= cursor.next_source:
                out = take(batch, cursor, gaps)
                if out is not None:
                    chosen.append(out)
        if end is not None:
            source.advance((part.topic, part.partition), end)
    return chosen, gaps


def take(batch: record_batches.Batch, cursor: Cursor, gaps: Gaps) -> Out | None:
    """The batch as it is, or what of its records the partition still needs in a batch built
    again; the cursor moved past it, and the gaps before it noted."""
    if batch.writable and batch.base >= cursor.next_source:
        if batch.base != cursor.next_source:
            gaps.append((cursor, translation.Entry(batch.base, cursor.dest_next)))
        out = Out(cursor, batch.count, cursor.dest_next, view=batch.view)
        cursor.next_source, cursor.dest_next = batch.last + 1, cursor.dest_next + batch.count
        return out
    records = record_batches.records_of(batch, since=cursor.next_source)
    if not records:
        return None  # what is left of it lies before where the partition goes on
    codec = batch.attributes & record_batches.CODEC
    out = Out(cursor, len(records), cursor.dest_next, records=records, codec=codec)
    for record in records:
        if record.offset != cursor.next_source:
            gaps.append((cursor, translation.Entry(record.offset, cursor.dest_next)))
        cursor.next_source, cursor.dest_next = record.offset + 1, cursor.dest_next + 1
    return out


class BatchCopier(Copier):
    """A link's copier on the batch path."""

    path = BATCH
    writer_class = BatchWriter
    writer: BatchWriter

    def __init__(self, spec: payloads.LinkSpec, slot: Any, number: int, **clients: Any):
        clients.setdefault("consumer", BatchSource)
        super().__init__(spec, slot, number, **clients)
        self.source: BatchSource = self.consumer  # type: ignore[assignment]

    def copy(self) -> None:
        wait = math.ceil(max(self.next_report - time.monotonic(), 0) * 1000) / 1000
        writer = self.writer
        if writer.full():  # the destination is behind: what was fetched is written first
            writer.pump(wait=min(wait, 0.2))
            return
        # While batches wait for answers, the source is not waited on: its answers are taken
        # as they come, between the destination's.
        busy = writer.queued() > 0
        fetched = self.source.take(0, 0 if busy else max(min(wait, 0.5), 0.001))
        if self.source.error and not self.error:
            self.error = self.source.error
        if not fetched:
            self.empty_polls += 1
            writer.pump()
            if busy:  # until the source or the destination answers, whichever comes first
                kafka_wire.ready(self.source.awaited() + writer.awaited(), min(wait, 0.05))
            return
        self.empty_polls = 0
        if self.ending or not self.slot.in_touch():
            return  # read, never written: the partitions start again from the destination
        chosen, gaps = choose(fetched, self.cursors, self.source)
        if not writer.full():
            self.source.fetch_ahead()  # the next batches come while these are written
        if gaps:
            writer.store(gaps)  # each entry stored before its batch is sent
        writer.write(chosen)
        if chosen:
            self.resets, self.error = 0, ""
        writer.check_deliveries()
