"""Kafka's record batches (magic v2) as they lie in a fetch response: each batch's header, read
where it lies; which batches a `read_committed` reader keeps; a batch rewritten in place as
another producer writes it; and, for a batch that cannot be written as it is, its records
decoded and a batch of them built again.

What a broker takes from a client (tried by hand, `bench/batch_path.py --limits`): base offset
0, one batch per partition per produce request, and offsets without gaps inside a batch (a
compacted batch's gaps are refused). Everything from the attributes' compression bits through
the records is written as it was read; only the producer id, epoch and base sequence, the
transactional bit and the CRC-32C that covers them are the writer's own.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass

import crc32c
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

HEADER = 61  # a v2 batch's header, up to its first record
CRC_FROM = 21  # the CRC-32C covers the attributes to the end
CODEC, LOG_APPEND_TIME, TRANSACTIONAL, CONTROL = 0x07, 0x08, 0x10, 0x20
_HEAD = struct.Struct(">qiiBIhiqqqhii")  # base offset .. record count
_PRODUCER = struct.Struct(">qhi")  # producer id, epoch, base sequence, at 43
ABORT = 0  # a control record's key type: 0 abort, 1 commit


@dataclass(slots=True)
class Batch:
    """One whole batch in a fetched records section."""

    view: memoryview  # the batch, where it lies
    base: int  # its base offset (the source's)
    last: int  # its last offset
    count: int  # its records
    attributes: int
    producer_id: int

    @property
    def control(self) -> bool:
        return bool(self.attributes & CONTROL)

    @property
    def transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL)

    @property
    def writable(self) -> bool:
        """Whether a broker takes it from a client as it is: records at every offset from its
        base to its last (compaction leaves gaps, and empty batches), stamped by its producer
        (a LogAppendTime batch's time is the source broker's, which a destination would stamp
        again)."""
        return self.count == self.last - self.base + 1 and not self.attributes & LOG_APPEND_TIME


def batches(records: memoryview) -> Iterator[Batch]:
    """Each whole batch of a fetched records section (a fetch may end with part of one). A
    batch of another magic than 2 raises ValueError: Kafka 4 writes no other."""
    pos, size = 0, len(records)
    while pos + HEADER <= size:
        base, length, _, magic, _, attributes, last_delta, _, _, pid, _, _, count = (
            _HEAD.unpack_from(records, pos)
        )
        end = pos + 12 + length
        if end > size:
            return
        if magic != 2:
            raise ValueError(f"a record batch of magic {magic} at offset {base}: only 2 is read")
        yield Batch(records[pos:end], base, base + last_delta, count, attributes, pid)
        pos = end


def rewrite(batch: memoryview, producer_id: int, epoch: int, sequence: int) -> None:
    """The batch, where it lies, as this idempotent producer writes it: its producer fields and
    CRC, the transactional bit cleared (a committed transaction's records, written by a producer
    of no transaction), base offset 0 and no leader epoch (a broker sets both as it appends,
    outside the CRC, and refuses another base offset)."""
    struct.pack_into(">q", batch, 0, 0)
    struct.pack_into(">i", batch, 12, -1)
    _PRODUCER.pack_into(batch, 43, producer_id, epoch, sequence)
    batch[22] &= ~TRANSACTIONAL & 0xFF
    struct.pack_into(">I", batch, 17, crc32c.crc32c(batch[CRC_FROM:]))


def aborts(batch: Batch) -> bool:
    """Whether a control batch is a transaction's abort marker (its one record's key is
    version int16, type int16)."""
    record = DefaultRecordBatch(bytes(batch.view))
    for marker in record:
        key = marker.key or b""
        return len(key) >= 4 and struct.unpack_from(">h", key, 2)[0] == ABORT
    return False


def committed(
    found: Iterator[Batch], aborted: list[tuple[int, int]]
) -> Iterator[tuple[Batch, bool]]:
    """Each batch of a `read_committed` fetch, with whether a reader keeps it: not a control
    batch, nor a batch of a transaction the fetch names aborted (`aborted`: producer id and
    first offset of each, as the fetch response lists them), as Kafka's consumer decides."""
    pending = sorted(aborted, key=lambda a: a[1])
    aborting: set[int] = set()
    for batch in found:
        if batch.producer_id >= 0:
            while pending and pending[0][1] <= batch.last:
                aborting.add(pending.pop(0)[0])
            if batch.control and aborts(batch):
                aborting.discard(batch.producer_id)
            elif batch.transactional and batch.producer_id in aborting:
                yield batch, False
                continue
        yield batch, not batch.control


@dataclass(slots=True)
class Record:
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]]


def records_of(batch: Batch, since: int = 0) -> list[Record]:
    """The batch's records from source offset `since` on, decoded (and decompressed)."""
    decoded = DefaultRecordBatch(bytes(batch.view))
    log_append = batch.attributes & LOG_APPEND_TIME
    return [
        Record(
            r.offset,
            decoded.max_timestamp if log_append else r.timestamp,
            r.key,
            r.value,
            list(r.headers),
        )
        for r in decoded
        if r.offset >= since
    ]


def build(
    records: list[Record], codec: int, producer_id: int, epoch: int, sequence: int
) -> bytearray:
    """A batch of these records at consecutive offsets from 0, compressed with `codec` (as the
    source's batch was), as this idempotent producer writes it."""
    builder = DefaultRecordBatchBuilder(2, codec, False, producer_id, epoch, sequence, 1 << 31)
    for i, r in enumerate(records):
        builder.append(i, r.timestamp, r.key, r.value, r.headers)
    built: bytearray = builder.build()
    return built
