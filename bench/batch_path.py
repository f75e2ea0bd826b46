"""Issue 48's measured prototype: is copying record batches as they are (the batch path) at
least 2x cheaper in CPU per GiB than copying record by record (the record path)?

Both copy one preloaded topic from the bench's source cluster to a fresh topic on its
destination, in a process of their own whose CPU time is measured from its first fetch to its
last acknowledgement:

- **the record path**: a confluent-kafka consumer and an idempotent producer with the engine's
  settings (`spark_jobs.reading.FAST_FETCH`, `mirror_writer.WRITER_TUNING` and
  `WRITER_GUARANTEES`), each record handed from one to the other in Python, as the engine's
  copier does (without its bookkeeping, so this is the least the record path costs);
- **the batch path**: Kafka's own Fetch and Produce requests (kafka-python's protocol messages
  over a socket of our own), each fetched record batch produced unchanged but for what the
  destination must own: the producer id, epoch and base sequence of an idempotent producer
  (InitProducerId), and the CRC-32C that covers them. The destination's batches are then read
  back raw and compared with the source's, byte for byte, from the attributes through the
  records (the producer fields and the CRC apart), at the same offsets.

    python -m bench.batch_path [--records N] [--size B] [--partitions P]
                               [--compression none,lz4,zstd] [--no-doc]

It first tries what a broker takes from a client (`probe_limits`). It runs on the bench's stack
(`make bench` starts it), prints one JSON line per copy, and writes its section of
docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import socket
import struct
import subprocess
import sys
import time
from collections import deque
from collections.abc import Iterator

import crc32c
from kafka.protocol.consumer.fetch import FetchRequest, FetchResponse
from kafka.protocol.producer.produce import ProduceResponse
from kafka.protocol.producer.transaction import InitProducerIdRequest, InitProducerIdResponse

from . import cluster, sections

HEADER = 61  # a v2 record batch's header, up to its first record
CRC_FROM = 21  # the CRC-32C covers the attributes to the end
PRODUCER_FIELDS = struct.Struct(">qhi")  # producer id, epoch, base sequence: at 43
CONTROL, TRANSACTIONAL = 0x20, 0x10
FETCH_VERSION, PRODUCE_VERSION, INIT_PID_VERSION = 12, 9, 4  # topics by name


class Connection:
    """One socket to a broker, requests pipelined and answered in order. A response is read
    into the connection's own buffer, reused by the next: what is read of it must be used (or
    copied) before the next response is received."""

    def __init__(self, address: str):
        host, port = address.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        self.next_id = 0
        self.waiting: deque = deque()
        self.buffer = bytearray(1 << 20)

    def send(self, request, response_class, version: int) -> None:
        request.with_header(correlation_id=self.next_id, client_id=CLIENT_ID.decode())
        self.sock.sendall(request.encode(version=version, header=True, framed=True))
        self.waiting.append((self.next_id, response_class, version))
        self.next_id += 1

    def send_parts(self, parts: list, response_class, version: int) -> int:
        """A request already encoded, in parts (header and body, the records among them as
        they lie in a fetch's buffer), sent without joining them. Its correlation id."""
        correlation = self.next_id
        views = [memoryview(part).cast("B") for part in parts]
        size = sum(len(v) for v in views)
        views.insert(0, memoryview(struct.pack(">i", size)))
        while views:
            sent = self.sock.sendmsg(views)
            while sent:
                if sent >= len(views[0]):
                    sent -= len(views.pop(0))
                else:
                    views[0], sent = views[0][sent:], 0
        self.waiting.append((correlation, response_class, version))
        self.next_id += 1
        return correlation

    def receive(self):
        """The next response, decoded (its values copied out of the buffer)."""
        response_class, version, payload = self.receive_raw()
        return response_class.decode(payload, version=version)

    def receive_raw(self) -> tuple:
        """The next response's class, version and body, in the connection's buffer."""
        correlation, response_class, version = self.waiting.popleft()
        size = int.from_bytes(self._exactly(4), "big")
        payload = self._exactly(size)
        assert int.from_bytes(payload[:4], "big") == correlation
        start = 5 if response_class.flexible_version_q(version) else 4  # no tagged fields
        return response_class, version, payload[start:]

    def call(self, request, response_class, version: int):
        self.send(request, response_class, version)
        return self.receive()

    def _exactly(self, n: int) -> memoryview:
        if n > len(self.buffer):
            self.buffer = bytearray(n)
        buffer = memoryview(self.buffer)[:n]
        got = 0
        while got < n:
            read = self.sock.recv_into(buffer[got:])
            if not read:
                raise ConnectionError("the broker closed the connection")
            got += read
        return buffer


CLIENT_ID = b"isthmus-batch-path"


def _uvarint(view: memoryview, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = view[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7


def _tags(view: memoryview, pos: int) -> int:
    """Past a flexible message's tagged fields."""
    count, pos = _uvarint(view, pos)
    for _ in range(count):
        _, pos = _uvarint(view, pos)
        size, pos = _uvarint(view, pos)
        pos += size
    return pos


def _encode_uvarint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def fetched_partitions(body: memoryview) -> Iterator[tuple[int, int, list, memoryview]]:
    """A Fetch v12 response's partitions, read where they lie: (partition, error code, aborted
    transactions as (producer id, first offset), the records section)."""
    error = struct.unpack_from(">h", body, 4)[0]
    assert error == 0, f"fetch error {error}"
    topics, pos = _uvarint(body, 10)  # past throttle time, error code, session id
    for _ in range(topics - 1):
        size, pos = _uvarint(body, pos)
        pos += size - 1  # the topic's name
        partitions, pos = _uvarint(body, pos)
        for _ in range(partitions - 1):
            partition, code = struct.unpack_from(">ih", body, pos)
            pos += 6 + 24  # past the high watermark, last stable offset and log start offset
            count, pos = _uvarint(body, pos)
            aborted = []
            for _ in range(max(count - 1, 0)):
                aborted.append(struct.unpack_from(">qq", body, pos))
                pos = _tags(body, pos + 16)
            size, pos = _uvarint(body, pos + 4)  # past the preferred read replica
            records = body[pos : pos + max(size - 1, 0)]
            pos = _tags(body, pos + max(size - 1, 0))
            yield partition, code, aborted, records
        pos = _tags(body, pos)


def batches(records: bytes | memoryview) -> Iterator[tuple[int, int]]:
    """(start, end) of each whole batch in a fetched records section (a fetch may end with
    part of one)."""
    pos, size = 0, len(records)
    while pos + HEADER <= size:
        end = pos + 12 + int.from_bytes(records[pos + 8 : pos + 12], "big")
        if end > size:
            return
        yield pos, end
        pos = end


def rewrite(batch: memoryview, producer_id: int, epoch: int, sequence: int) -> None:
    """The batch, where it lies, as this producer writes it: its producer fields and CRC, the
    transactional bit cleared (a committed transaction's records, written by an idempotent
    producer), base offset 0 and no leader epoch (a broker refuses another base offset from a
    client; it sets both, outside the CRC, as it appends)."""
    struct.pack_into(">q", batch, 0, 0)
    struct.pack_into(">i", batch, 12, -1)
    PRODUCER_FIELDS.pack_into(batch, 43, producer_id, epoch, sequence)
    batch[22] &= ~TRANSACTIONAL & 0xFF
    struct.pack_into(">I", batch, 17, crc32c.crc32c(batch[CRC_FROM:]))


class BatchCopier:
    """The batch path over one source topic: fetch, rewrite, produce."""

    def __init__(self, source: str, destination: str, topic: str, ends: dict[int, int]):
        self.reader, self.writer = Connection(source), Connection(destination)
        self.topic, self.ends = topic, ends
        self.producer_id, self.epoch = _init_producer(self.writer)
        self.position = dict.fromkeys(ends, 0)
        self.sequence = dict.fromkeys(ends, 0)
        self.fetched = self.produced = self.batches = 0

    def left(self) -> bool:
        return any(self.position[p] < self.ends[p] for p in self.ends)

    def fetch(self) -> None:
        wanted = {p: self.position[p] for p in self.ends if self.position[p] < self.ends[p]}
        self.reader.send(
            fetch_request(self.topic, wanted, 32 << 20, 1), FetchResponse, FETCH_VERSION
        )

    def take(self) -> list[list[tuple[int, memoryview]]]:
        """The answer to the fetch asked for, its batches rewritten where they lie in the
        reader's buffer: the i-th of every partition in round i."""
        _, _, body = self.reader.receive_raw()
        rounds: list[list[tuple[int, memoryview]]] = []
        for partition, code, aborted, records in fetched_partitions(body):
            assert code == 0, f"partition {partition}: error {code}"
            assert not aborted, "the prototype copies no aborted batches"
            self.fetched += records.nbytes
            for i, batch in enumerate(self._rewritten(partition, records)):
                if len(rounds) <= i:
                    rounds.append([])
                rounds[i].append((partition, batch))
        return rounds

    def _rewritten(self, partition: int, records: memoryview) -> Iterator[memoryview]:
        for start, end in batches(records):
            base = int.from_bytes(records[start : start + 8], "big")
            last_delta = int.from_bytes(records[start + 23 : start + 27], "big")
            self.position[partition] = base + last_delta + 1
            if records[start + 22] & CONTROL:
                continue  # a transaction marker: the destination writes none
            batch = records[start:end]
            rewrite(batch, self.producer_id, self.epoch, self.sequence[partition])
            self.sequence[partition] += last_delta + 1
            yield batch

    def produce(self, rounds: list[list[tuple[int, memoryview]]]) -> None:
        """One batch per partition in each produce request (Kafka takes no more); all sent,
        then all answered."""
        for batches_of_round in rounds:
            parts = produce_parts(self.topic, self.writer.next_id, batches_of_round)
            self.writer.send_parts(parts, ProduceResponse, PRODUCE_VERSION)
            self.produced += sum(batch.nbytes for _, batch in batches_of_round)
            self.batches += len(batches_of_round)
        while self.writer.waiting:
            done = self.writer.receive()
            for part in done.responses[0].partition_responses:
                assert part.error_code == 0, part


def produce_parts(topic: str, correlation: int, records: list[tuple[int, memoryview]]) -> list:
    """A Produce v9 request (acks all, no transactional id) of each partition's records,
    encoded around them where they lie: its parts, to send as they are."""
    name = topic.encode()
    parts: list = [
        struct.pack(">hhih", 0, PRODUCE_VERSION, correlation, len(CLIENT_ID))
        + CLIENT_ID
        + b"\x00"  # the header's tagged fields
        + b"\x00"  # no transactional id
        + struct.pack(">hi", -1, 30000)
        + _encode_uvarint(2)  # one topic
        + _encode_uvarint(len(name) + 1)
        + name
        + _encode_uvarint(len(records) + 1)
    ]
    for partition, batch in records:
        parts += [struct.pack(">i", partition) + _encode_uvarint(batch.nbytes + 1), batch, b"\x00"]
    parts.append(b"\x00\x00")  # the topic's tagged fields, the request's
    return parts


def _init_producer(connection: Connection) -> tuple[int, int]:
    """An idempotent producer's id and epoch, asked again while the broker's coordinator is
    loading or not available yet (a stack just started), as Kafka's clients do."""
    deadline = time.monotonic() + 60
    while True:
        got = connection.call(
            InitProducerIdRequest(
                transactional_id=None,
                transaction_timeout_ms=60000,
                producer_id=-1,
                producer_epoch=-1,
            ),
            InitProducerIdResponse,
            INIT_PID_VERSION,
        )
        if got.error_code not in RETRIABLE or time.monotonic() > deadline:
            assert got.error_code == 0, got
            return got.producer_id, got.producer_epoch
        time.sleep(0.5)


RETRIABLE = {14, 15}  # COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE


def fetch_request(topic: str, positions: dict[int, int], per_partition: int, isolation: int):
    return FetchRequest(
        replica_id=-1,
        max_wait_ms=500,
        min_bytes=1,
        max_bytes=160 << 20,
        isolation_level=isolation,
        session_id=0,
        session_epoch=-1,
        topics=[
            FetchRequest.FetchTopic(
                topic=topic,
                partitions=[
                    FetchRequest.FetchTopic.FetchPartition(
                        partition=p,
                        current_leader_epoch=-1,
                        fetch_offset=offset,
                        last_fetched_epoch=-1,
                        log_start_offset=-1,
                        partition_max_bytes=per_partition,
                    )
                    for p, offset in positions.items()
                ],
            )
        ],
        forgotten_topics_data=[],
        rack_id="",
    )


def copy_batches(source: str, destination: str, topic: str, ends: dict[int, int]) -> dict:
    """The batch path: every batch below `ends` copied; what it cost. The next fetch is asked
    for before this one's batches are produced, so the two overlap."""
    copier = BatchCopier(source, destination, topic, ends)
    began_cpu, began = _cpu(), time.monotonic()
    copier.fetch()
    while copier.reader.waiting:
        rounds = copier.take()
        if copier.left():  # asked for now, received once these batches are written
            copier.fetch()
        copier.produce(rounds)
    return {
        "path": "batch",
        "cpu_seconds": _cpu() - began_cpu,
        "seconds": time.monotonic() - began,
        "bytes_fetched": copier.fetched,
        "bytes_produced": copier.produced,
        "batches": copier.batches,
    }


def copy_records(source: str, destination: str, topic: str, ends: dict[int, int]) -> dict:
    """The record path, as the engine's copier reads and writes."""
    from confluent_kafka import Consumer, Producer, TopicPartition

    from spark_jobs.mirror_writer import WRITER_GUARANTEES, WRITER_TUNING
    from spark_jobs.reading import FAST_FETCH

    consumer = Consumer(
        {
            "bootstrap.servers": source,
            "group.id": "bench-record-path",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
            **FAST_FETCH,
        }
    )
    failures: list = []
    producer = Producer(
        {
            "bootstrap.servers": destination,
            **WRITER_TUNING,
            **WRITER_GUARANTEES,
            "on_delivery": lambda err, _: failures.append(err) if err else None,
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in ends])
    left = sum(ends.values())
    began_cpu, began = _cpu(), time.monotonic()
    copied = 0
    while left:
        for msg in consumer.consume(10_000, 1.0):
            if msg.error():
                continue
            while True:
                try:
                    producer.produce(
                        topic,
                        msg.value(),
                        msg.key(),
                        partition=msg.partition() or 0,
                        headers=msg.headers(),
                        timestamp=msg.timestamp()[1],
                    )
                    break
                except BufferError:
                    producer.poll(0.01)
            copied += len(msg.value() or b"") + len(msg.key() or b"")
            left -= 1
        producer.poll(0)
    assert producer.flush(120) == 0 and not failures, failures
    result = {
        "path": "record",
        "cpu_seconds": _cpu() - began_cpu,
        "seconds": time.monotonic() - began,
        "bytes_copied": copied,
    }
    consumer.close()
    return result


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def raw_batches(address: str, topic: str, partition: int, end: int) -> list[tuple[int, bytes]]:
    """(base offset, the batch from its attributes on, without its producer fields) of each
    batch of a partition below `end`."""
    connection, found, offset = Connection(address), [], 0
    while offset < end:
        request = fetch_request(topic, {partition: offset}, 16 << 20, 0)
        answer = connection.call(request, FetchResponse, FETCH_VERSION)
        records = answer.responses[0].partitions[0].records or b""
        for start, stop in batches(records):
            base = int.from_bytes(records[start : start + 8], "big")
            last_delta = int.from_bytes(records[start + 23 : start + 27], "big")
            if base + last_delta >= offset:
                kept = records[start + CRC_FROM : start + 43] + records[start + 57 : stop]
                found.append((base, kept))
                offset = base + last_delta + 1
    return found


def probe_limits() -> dict[str, int]:
    """What a broker takes from a client, tried first by hand, as issue 48 asks: a batch of two
    records fetched from the source and produced to the destination as the batch path does,
    then changed in one way at a time. Each case's error code (0: taken; 87: INVALID_RECORD)."""
    from confluent_kafka import Producer

    topic = f"{cluster.PREFIX}batch-path-limits"
    for address in (cluster.SOURCE, cluster.DESTINATION):
        cluster.delete_topics(address, [topic])
        cluster.create_topics(address, [topic], 1)
    producer = Producer({"bootstrap.servers": cluster.SOURCE, "linger.ms": 200})
    producer.produce(topic, b"first", b"1", partition=0)
    producer.produce(topic, b"second", b"2", partition=0)
    assert producer.flush(30) == 0
    reader = Connection(cluster.SOURCE)
    reader.send(fetch_request(topic, {0: 0}, 1 << 20, 1), FetchResponse, FETCH_VERSION)
    _, _, body = reader.receive_raw()
    records = next(fetched_partitions(body))[3]
    start, end = next(batches(records))
    fetched = bytes(records[start:end])
    assert int.from_bytes(fetched[57:61], "big") == 2, "the two records in one batch"

    def attempt(in_crc=None, outside_crc=None, twice: bool = False) -> int:
        """Produced by a new idempotent producer, changed by `in_crc` before the batch's CRC
        is made and by `outside_crc` after."""
        writer = Connection(cluster.DESTINATION)
        producer_id, epoch = _init_producer(writer)
        first = bytearray(fetched)
        if in_crc:
            in_crc(first)
        rewrite(memoryview(first), producer_id, epoch, 0)
        if outside_crc:
            outside_crc(first)
        sent = first
        if twice:
            second = bytearray(fetched)
            rewrite(memoryview(second), producer_id, epoch, 2)
            sent = first + second
        parts = produce_parts(topic, writer.next_id, [(0, memoryview(sent))])
        writer.send_parts(parts, ProduceResponse, PRODUCE_VERSION)
        return int(writer.receive().responses[0].partition_responses[0].error_code)

    return {
        "as the batch path writes it": attempt(),
        "base offset 5 (not 0)": attempt(outside_crc=_base_offset_5),
        "two batches of one partition in one request": attempt(twice=True),
        "inner offsets 0 and 2 (a compacted batch)": attempt(in_crc=_gap_in_offsets),
    }


def _base_offset_5(batch: bytearray) -> None:
    struct.pack_into(">q", batch, 0, 5)


def _gap_in_offsets(batch: bytearray) -> None:
    """The second record's offset delta 2, not 1, and the batch's last offset delta with it,
    as compaction leaves a batch (records are zigzag varints: delta 1 is 0x02, 2 is 0x04)."""
    view = memoryview(batch)
    length, pos = _uvarint(view, HEADER)  # the first record's length (zigzag)
    pos += length // 2  # past the first record
    _, pos = _uvarint(view, pos)  # the second record's length
    pos += 1  # its attributes
    _, pos = _uvarint(view, pos)  # its timestamp delta
    assert batch[pos] == 0x02
    batch[pos] = 0x04
    struct.pack_into(">i", batch, 23, 2)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--size", type=int, default=1000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--compression", default="none,lz4,zstd", help="a comma-separated list")
    parser.add_argument("--no-doc", action="store_true", help="print, do not write the document")
    parser.add_argument("--copy", nargs=3, metavar=("PATH", "TOPIC", "ENDS"))
    args = parser.parse_args(argv)
    if args.copy:  # in a process of its own, measured alone
        path, topic, ends_json = args.copy
        ends = {int(p): e for p, e in json.loads(ends_json).items()}
        copy = copy_batches if path == "batch" else copy_records
        print(json.dumps(copy(cluster.SOURCE, cluster.DESTINATION, topic, ends)))
        return 0
    cluster.ensure_stack()
    limits = probe_limits()
    print(json.dumps(limits), flush=True)
    copies: list[dict] = []
    for compression in args.compression.split(","):
        for result in measure(compression, args):
            print(json.dumps(result), flush=True)
            copies.append(result)
    results = {"limits": limits, "when": time.strftime("%Y-%m-%d"), "copies": copies}
    if not args.no_doc:
        sections.BATCH_PATH.write(section(results, args))
    return 0


def measure(compression: str, args) -> list[dict]:
    """One topic written with `compression`, copied by the record path and then the batch
    path: what each cost."""
    topic = f"{cluster.PREFIX}batch-path-{compression}"
    cluster.delete_topics(cluster.SOURCE, [topic])
    cluster.delete_topics(cluster.DESTINATION, [topic])
    cluster.create_topics(cluster.SOURCE, [topic], args.partitions)
    _fill(topic, args, compression)
    ends = {
        p: e for (_, p), e in cluster.end_offsets(cluster.SOURCE, {topic: args.partitions}).items()
    }
    wire = sum(len(b) for p in ends for _, b in raw_batches(cluster.SOURCE, topic, p, ends[p]))
    logical, found = 0, []
    for path in ("record", "batch"):
        cluster.delete_topics(cluster.DESTINATION, [topic])
        cluster.create_topics(cluster.DESTINATION, [topic], args.partitions)
        out = subprocess.run(
            [sys.executable, "-m", "bench.batch_path", "--copy", path, topic, json.dumps(ends)],
            cwd=cluster.ROOT,
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        result = json.loads(out.strip().splitlines()[-1])
        # Per GiB of the records' keys and values, as every other row of docs/benchmarks.md
        # counts (the record path counts them as it copies); and per GiB on the wire.
        logical = result.get("bytes_copied", logical)
        records = sum(ends.values())
        result.update(
            compression=compression,
            records=records,
            record_gib=logical / 2**30,
            wire_gib=wire / 2**30,
            cpu_seconds_per_gib=result["cpu_seconds"] / (logical / 2**30),
            records_per_second=records / result["seconds"],
        )
        if path == "batch":
            result["identical_batches"] = all(
                raw_batches(cluster.SOURCE, topic, p, ends[p])
                == raw_batches(cluster.DESTINATION, topic, p, ends[p])
                for p in ends
            )
        found.append(result)
    return found


def section(results: dict, args) -> str:
    copies = results["copies"]
    rows, ratios = [], []
    for record, batch in zip(copies[::2], copies[1::2], strict=True):
        name = "uncompressed" if record["compression"] == "none" else record["compression"]
        identical = f"yes, all {batch['batches']:,}" if batch["identical_batches"] else "**no**"
        rows += [
            f"| {name} ({record['wire_gib']:.2f} GiB on the wire) | record | "
            f"{record['cpu_seconds_per_gib']:.2f} | {record['records_per_second']:,.0f} | – | – |",
            f"| | batch | **{batch['cpu_seconds_per_gib']:.2f}** | "
            f"{batch['records_per_second']:,.0f} | {identical} | "
            f"{batch['bytes_fetched'] / batch['bytes_produced']:.3f} |",
        ]
        ratios.append(
            f"- {name}: CPU per GiB "
            f"{batch['cpu_seconds_per_gib'] / record['cpu_seconds_per_gib']:.2f}×, records/s "
            f"{batch['records_per_second'] / record['records_per_second']:.1f}×"
        )
    answers = {0: "taken", 87: "INVALID_RECORD (87)"}
    limits = [f"| {case} | {answers.get(code, code)} |" for case, code in results["limits"].items()]
    return SECTION.format(
        when=results["when"],
        partitions=args.partitions,
        records=args.records,
        size=args.size,
        rows="\n".join(rows),
        ratios="\n".join(ratios),
        limits="\n".join(limits),
        fetched="bytes fetched / bytes written",
        identical="batches identical from the attributes through the records (producer fields "
        "and CRC apart), at the same offsets",
    )


SECTION = """## Byte for byte: the batch path, a measured prototype (issue 48)

`python -m bench.batch_path` ({when}, the machine above, one broker per cluster on the bench's
stack). Issue 48 asks whether copying record batches as they are costs at least 2× less CPU per
GiB than copying record by record, before the engine is built on it. One topic of {partitions}
partitions, {records:,} records of {size:,} B (text of random words and numbers), written by an
idempotent confluent-kafka producer (`linger.ms` 5, `batch.size` 1 MiB), is copied to a fresh
topic on the destination twice, each copy in a process of its own whose CPU (user and system,
`getrusage`) is counted from its first fetch to its last acknowledgement:

- **record path**: a confluent-kafka consumer and an idempotent producer with the engine's
  settings (`spark_jobs/reading.py`, `mirror_writer.py`), each record handed from one
  to the other in Python: the least the engine's record path costs, without its bookkeeping;
- **batch path**: Kafka's own Fetch (v12, `read_committed`, 32 MiB per partition) and Produce
  (v9, acks all) requests on a socket of its own, one fetch in flight while the last one's
  batches are written. Each batch is rewritten where it lies in the fetch's buffer: the
  producer id, epoch and base sequence of an idempotent producer (InitProducerId), the
  transactional bit cleared, base offset 0, no leader epoch, and the CRC-32C (the `crc32c`
  package, in hardware). Each produce request is written around the batches and sent with
  `sendmsg`, so no batch is copied in the process. The destination's batches are then read
  back raw and compared with the source's.

| source batches | path | CPU s per GiB of records | records/s | {identical} | {fetched} |
| --- | --- | ---: | ---: | --- | ---: |
{rows}

Batch path / record path (a GiB is of the records' keys and values, as everywhere above):

{ratios}

**What a broker takes from a client** (a batch of two records fetched from the source, written
by a new idempotent producer as the batch path writes it, then changed in one way at a time):

| the batch | the broker's answer |
| --- | --- |
{limits}

So a produce request carries one batch per partition (the prototype writes the i-th batch of
each partition in request i, pipelined), and a compacted source's batches with gaps in their
offsets cannot be written as they are: those partitions stay on the record path, whose
translation entries already cover such gaps. Not tried yet: transactional sources (the
prototype refuses a fetch with aborted transactions; it writes committed batches with the
transactional bit cleared and skips the markers), and a destination topic that stamps
LogAppendTime.

Where the batch path's CPU goes (cProfile and `time`, uncompressed, on 2026-12-01): about 70 %
is the kernel's socket copies, the rest reading the fetch response and writing the produce
requests in Python; the CRC-32C of a GiB takes 0.03 s. A first version that let kafka-python
decode and encode the messages, and so copied each batch three times, took 1.1 CPU s per GiB.

**Left for the engine** (issue 48): the batch path inside the copier slots, with leader
changes, retries that keep a batch's sequence, authentication (SASL, TLS), the fencing,
first-write check and settle rules as today, aborted transactions, the schema gate (its links on
the record path), a link config to choose a path, and the catch-up rows against MirrorMaker 2
and the raw client limit.
"""


def _fill(topic: str, args, compression: str) -> None:
    from confluent_kafka import Producer

    producer = Producer(
        {
            "bootstrap.servers": cluster.SOURCE,
            "linger.ms": 5,
            "batch.size": 1_048_576,
            "acks": "all",
            "enable.idempotence": True,
            "compression.type": compression,
            "queue.buffering.max.kbytes": 1_048_576,
        }
    )
    # Values that compress about as real ones do: text of words and numbers drawn at random,
    # 4,096 of them (so a batch of a thousand records holds few repeats).
    draw = random.Random(48)  # noqa: S311 (test data, the same every run)
    vocabulary = [
        bytes(draw.choices(b"abcdefghijklmnopqrstuvwxyz", k=draw.randint(3, 9))) for _ in range(600)
    ]
    values = []
    for _ in range(4096):
        words = [
            draw.choice(vocabulary) if draw.random() < 0.7 else str(draw.randint(0, 10**6)).encode()
            for _ in range(args.size // 4)
        ]
        values.append(b" ".join(words)[: args.size].ljust(args.size))
    for i in range(args.records):
        value = values[i % len(values)]
        while True:
            try:
                producer.produce(topic, value, str(i).encode(), partition=i % args.partitions)
                break
            except BufferError:
                producer.poll(0.05)
    assert producer.flush(300) == 0


if __name__ == "__main__":
    sys.exit(main())
