"""Record batches as the batch path reads, keeps, rewrites and builds them again
(infra/record_batches.py), on batches built as Kafka's clients build them."""

from __future__ import annotations

import struct

import crc32c
import pytest
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

from infra import record_batches
from infra.record_batches import CONTROL, LOG_APPEND_TIME, Record


def make(
    base: int,
    offsets: list[int],
    *,
    pid: int = -1,
    transactional: bool = False,
    marker: int | None = None,  # a control batch: 0 abort, 1 commit
    codec: int = 0,
    attributes: int = 0,
) -> bytes:
    """A batch at `base` with a record at each of `offsets` (deltas from base; gaps allowed)."""
    builder = DefaultRecordBatchBuilder(
        2, codec, transactional, pid, 0 if pid >= 0 else -1, 0 if pid >= 0 else -1, 1 << 20
    )
    for delta in offsets:
        if marker is None:
            # Compressible: a client sends a batch uncompressed that compression would not shrink.
            key, value = f"k{base + delta}".encode(), f"v{base + delta}".encode() * 40
        else:
            key, value = struct.pack(">hh", 0, marker), struct.pack(">hi", 0, 0)
        builder.append(delta, 1_700_000_000_000 + delta, key, value, [("h", b"x")])
    batch = bytearray(builder.build())
    struct.pack_into(">q", batch, 0, base)
    if marker is not None or attributes:
        batch[22] |= (CONTROL if marker is not None else 0) | attributes
        struct.pack_into(">I", batch, 17, crc32c.crc32c(bytes(batch[21:])))
    return bytes(batch)


def parse(*batches: bytes) -> list[record_batches.Batch]:
    return list(record_batches.batches(memoryview(bytearray(b"".join(batches)))))


def test_only_whole_batches_are_read_and_their_header_is_read_where_it_lies():
    first, second = make(0, [0, 1, 2]), make(3, [0, 1])
    found = parse(first, second[:-5])  # a fetch may end inside a batch
    assert [(b.base, b.last, b.count) for b in found] == [(0, 2, 3)]
    assert bytes(found[0].view) == first


def test_a_batch_with_gaps_or_stamped_by_its_broker_is_not_written_as_it_is():
    whole, compacted = parse(make(0, [0, 1, 2]), make(3, [0, 2]))
    stamped = parse(make(5, [0], attributes=LOG_APPEND_TIME))[0]
    assert whole.writable
    assert not compacted.writable and compacted.last == 5 and compacted.count == 2
    assert not stamped.writable


def test_a_rewritten_batch_differs_only_in_what_its_writer_owns():
    source = make(40, [0, 1, 2], pid=7, transactional=True, codec=4)
    batch = parse(source)[0]
    record_batches.rewrite(batch.view, 1234, 3, 99)
    written = bytes(batch.view)
    assert struct.unpack_from(">qi", written, 0)[0] == 0  # base offset: the broker's
    assert struct.unpack_from(">i", written, 12)[0] == -1  # no leader epoch
    assert struct.unpack_from(">qhi", written, 43) == (1234, 3, 99)
    assert written[22] == source[22] & ~0x10  # transactional bit cleared, codec kept
    assert written[23:43] == source[23:43] and written[57:] == source[57:]
    assert DefaultRecordBatch(written).validate_crc()


def test_a_read_committed_reader_keeps_neither_markers_nor_aborted_transactions():
    batches = parse(
        make(0, [0, 1], pid=5, transactional=True),  # aborted below
        make(2, [0, 1], pid=6, transactional=True),  # committed
        make(4, [0], pid=5, marker=0),  # abort of 5
        make(5, [0], pid=6, marker=1),  # commit of 6
        make(6, [0, 1], pid=5, transactional=True),  # 5's next transaction, committed
        make(8, [0], pid=5, marker=1),
        make(9, [0]),  # no transaction
    )
    kept = [(b.base, keep) for b, keep in record_batches.committed(iter(batches), [(5, 0)])]
    assert kept == [(0, False), (2, True), (4, False), (5, False), (6, True), (8, False), (9, True)]


def test_records_from_an_offset_are_built_again_at_consecutive_offsets():
    batch = parse(make(10, [0, 2, 5], codec=1))[0]  # gzip, with gaps
    records = record_batches.records_of(batch, since=12)
    assert [(r.offset, r.key) for r in records] == [(12, b"k12"), (15, b"k15")]
    built = DefaultRecordBatch(bytes(record_batches.build(records, 1, 77, 0, 5)))
    assert built.compression_type == 1 and built.producer_id == 77
    assert built.base_sequence == 5
    got = [(r.offset, r.key, r.value, r.timestamp, list(r.headers)) for r in built]
    assert got == [
        (0, b"k12", b"v12" * 40, 1_700_000_000_002, [("h", b"x")]),
        (1, b"k15", b"v15" * 40, 1_700_000_000_005, [("h", b"x")]),
    ]


def test_a_log_append_time_batch_s_records_keep_the_time_its_broker_stamped():
    batch = parse(make(0, [0, 1], attributes=LOG_APPEND_TIME))[0]
    stamp = DefaultRecordBatch(bytes(batch.view)).max_timestamp
    assert [r.timestamp for r in record_batches.records_of(batch)] == [stamp, stamp]


@pytest.mark.parametrize("codec", [0, 1, 2, 3, 4])
def test_every_codec_kafka_writes_is_decoded(codec):
    batch = parse(make(0, [0, 1], codec=codec))[0]
    assert batch.attributes & 7 == codec
    assert [r.value for r in record_batches.records_of(batch)] == [b"v0" * 40, b"v1" * 40]
    assert isinstance(record_batches.records_of(batch)[0], Record)
