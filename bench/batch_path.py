"""Issue 48's measured prototype: is copying record batches as they are (the batch path) at
least 2x cheaper in CPU per GiB than copying record by record (the record path)?

Both copy one preloaded topic from the bench's source cluster to a fresh topic on its
destination, in a process of their own whose CPU time is measured from its first fetch to its
last acknowledgement:

- **the record path**: a confluent-kafka consumer and an idempotent producer with the engine's
  settings (`spark_jobs.reading.FAST_FETCH`, `mirror_writer.new_producer`), each record handed
  from one to the other in Python, as the engine's copier does (without its bookkeeping, so
  this is the least the record path costs);
- **the batch path**: Kafka's own Fetch and Produce requests (kafka-python's protocol messages
  over a socket of our own), each fetched record batch produced unchanged but for what the
  destination must own: the producer id, epoch and base sequence of an idempotent producer
  (InitProducerId), and the CRC-32C that covers them. The destination's batches are then read
  back raw and compared with the source's, byte for byte, from the attributes through the
  records (the producer fields and the CRC apart), at the same offsets.

    python -m bench.batch_path [--records N] [--size B] [--partitions P]
                               [--compression none|gzip|snappy|lz4|zstd]

It runs on the bench's stack (`make bench` starts it; `manage.py devstack up source destination`
does too) and prints one JSON line per path. What it found is in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
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
from kafka.protocol.producer.produce import ProduceRequest, ProduceResponse
from kafka.protocol.producer.transaction import InitProducerIdRequest, InitProducerIdResponse

from . import cluster

HEADER = 61  # a v2 record batch's header, up to its first record
CRC_FROM = 21  # the CRC-32C covers the attributes to the end
PRODUCER_FIELDS = struct.Struct(">qhi")  # producer id, epoch, base sequence: at 43
CONTROL, TRANSACTIONAL = 0x20, 0x10
FETCH_VERSION, PRODUCE_VERSION, INIT_PID_VERSION = 12, 9, 4  # topics by name


class Connection:
    """One socket to a broker, requests pipelined and answered in order."""

    def __init__(self, address: str):
        host, port = address.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        self.next_id = 0
        self.waiting: deque = deque()

    def send(self, request, response_class, version: int) -> None:
        request.with_header(correlation_id=self.next_id, client_id="isthmus-batch-path")
        self.sock.sendall(request.encode(version=version, header=True, framed=True))
        self.waiting.append((self.next_id, response_class, version))
        self.next_id += 1

    def receive(self):
        correlation, response_class, version = self.waiting.popleft()
        size = int.from_bytes(self._exactly(4), "big")
        payload = self._exactly(size)
        assert int.from_bytes(payload[:4], "big") == correlation
        start = 5 if response_class.flexible_version_q(version) else 4  # no tagged fields
        return response_class.decode(payload[start:], version=version)

    def call(self, request, response_class, version: int):
        self.send(request, response_class, version)
        return self.receive()

    def _exactly(self, n: int) -> memoryview:
        buffer = memoryview(bytearray(n))
        got = 0
        while got < n:
            read = self.sock.recv_into(buffer[got:])
            if not read:
                raise ConnectionError("the broker closed the connection")
            got += read
        return buffer


def batches(records: bytes) -> Iterator[tuple[int, int]]:
    """(start, end) of each whole batch in a fetched records section (a fetch may end with
    part of one)."""
    pos, size = 0, len(records)
    while pos + HEADER <= size:
        end = pos + 12 + int.from_bytes(records[pos + 8 : pos + 12], "big")
        if end > size:
            return
        yield pos, end
        pos = end


def rewritten(batch: memoryview, producer_id: int, epoch: int, sequence: int) -> bytearray:
    """The batch as this producer writes it: its producer fields and CRC, the transactional bit
    cleared (a committed transaction's records, written by an idempotent producer)."""
    out = bytearray(batch)
    # As a producer sends it: base offset 0 (a broker refuses any other from a client) and no
    # leader epoch, both outside the CRC; the broker sets them as it appends.
    struct.pack_into(">q", out, 0, 0)
    struct.pack_into(">i", out, 12, -1)
    PRODUCER_FIELDS.pack_into(out, 43, producer_id, epoch, sequence)
    out[22] &= ~TRANSACTIONAL & 0xFF
    struct.pack_into(">I", out, 17, crc32c.crc32c(memoryview(out)[CRC_FROM:]))
    return out


class BatchCopier:
    """The batch path over one source topic: fetch, rewrite, produce."""

    def __init__(self, source: str, destination: str, topic: str, ends: dict[int, int]):
        self.reader, self.writer = Connection(source), Connection(destination)
        self.topic, self.ends = topic, ends
        got = self.writer.call(
            InitProducerIdRequest(
                transactional_id=None,
                transaction_timeout_ms=60000,
                producer_id=-1,
                producer_epoch=-1,
            ),
            InitProducerIdResponse,
            INIT_PID_VERSION,
        )
        assert got.error_code == 0, got
        self.producer_id, self.epoch = got.producer_id, got.producer_epoch
        self.position = dict.fromkeys(ends, 0)
        self.sequence = dict.fromkeys(ends, 0)
        self.fetched = self.produced = self.batches = 0

    def left(self) -> bool:
        return any(self.position[p] < self.ends[p] for p in self.ends)

    def fetch(self) -> None:
        wanted = {p: self.position[p] for p in self.ends if self.position[p] < self.ends[p]}
        self.reader.send(
            fetch_request(self.topic, wanted, 8 << 20, 1), FetchResponse, FETCH_VERSION
        )

    def take(self, answer) -> list[list[tuple[int, bytearray]]]:
        """A fetch's batches, rewritten: the i-th of every partition in round i."""
        assert answer.error_code == 0, answer
        rounds: list[list[tuple[int, bytearray]]] = []
        for part in answer.responses[0].partitions:
            assert part.error_code == 0, part
            assert not part.aborted_transactions, "the prototype copies no aborted batches"
            records = part.records or b""
            self.fetched += len(records)
            for i, batch in enumerate(self._rewritten(part.partition_index, records)):
                if len(rounds) <= i:
                    rounds.append([])
                rounds[i].append((part.partition_index, batch))
        return rounds

    def _rewritten(self, partition: int, records: bytes) -> Iterator[bytearray]:
        view = memoryview(records)
        for start, end in batches(records):
            base = int.from_bytes(view[start : start + 8], "big")
            last_delta = int.from_bytes(view[start + 23 : start + 27], "big")
            self.position[partition] = base + last_delta + 1
            if view[start + 22] & CONTROL:
                continue  # a transaction marker: the destination writes none
            yield rewritten(view[start:end], self.producer_id, self.epoch, self.sequence[partition])
            self.sequence[partition] += last_delta + 1

    def produce(self, rounds: list[list[tuple[int, bytearray]]]) -> None:
        """One batch per partition in each produce request (Kafka takes no more); all sent,
        then all answered."""
        for batches_of_round in rounds:
            request = ProduceRequest(
                transactional_id=None,
                acks=-1,
                timeout_ms=30000,
                topic_data=[
                    ProduceRequest.TopicProduceData(
                        name=self.topic,
                        partition_data=[
                            ProduceRequest.TopicProduceData.PartitionProduceData(
                                index=p, records=bytes(batch)
                            )
                            for p, batch in batches_of_round
                        ],
                    )
                ],
            )
            self.writer.send(request, ProduceResponse, PRODUCE_VERSION)
            self.produced += sum(len(batch) for _, batch in batches_of_round)
            self.batches += len(batches_of_round)
        while self.writer.waiting:
            done = self.writer.receive()
            for part in done.responses[0].partition_responses:
                assert part.error_code == 0, part


def fetch_request(topic: str, positions: dict[int, int], per_partition: int, isolation: int):
    return FetchRequest(
        replica_id=-1,
        max_wait_ms=500,
        min_bytes=1,
        max_bytes=100 << 20,
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
        rounds = copier.take(copier.reader.receive())
        if copier.left():
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
            "linger.ms": 2,
            "batch.size": 1_000_000,
            "queue.buffering.max.kbytes": 131_072,
            "queue.buffering.max.messages": 1_000_000,
            "acks": "all",
            "enable.idempotence": True,
            "enable.gapless.guarantee": True,
            "delivery.report.only.error": True,
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--size", type=int, default=1000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--compression", default="none")
    parser.add_argument("--copy", nargs=3, metavar=("PATH", "TOPIC", "ENDS"))
    args = parser.parse_args(argv)
    if args.copy:  # in a process of its own, measured alone
        path, topic, ends_json = args.copy
        ends = {int(p): e for p, e in json.loads(ends_json).items()}
        copy = copy_batches if path == "batch" else copy_records
        print(json.dumps(copy(cluster.SOURCE, cluster.DESTINATION, topic, ends)))
        return 0
    cluster.ensure_stack()
    topic = f"{cluster.PREFIX}batch-path-{args.compression}"
    cluster.delete_topics(cluster.SOURCE, [topic])
    cluster.delete_topics(cluster.DESTINATION, [topic])
    cluster.create_topics(cluster.SOURCE, [topic], args.partitions)
    _fill(topic, args)
    ends = {
        p: e for (_, p), e in cluster.end_offsets(cluster.SOURCE, {topic: args.partitions}).items()
    }
    results = []
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
        source_bytes = sum(
            len(b) for p in ends for _, b in raw_batches(cluster.SOURCE, topic, p, ends[p])
        )
        result.update(
            compression=args.compression,
            records=sum(ends.values()),
            gib=source_bytes / 2**30,
            cpu_seconds_per_gib=result["cpu_seconds"] / (source_bytes / 2**30),
            records_per_second=sum(ends.values()) / result["seconds"],
        )
        if path == "batch":
            result["identical_batches"] = all(
                raw_batches(cluster.SOURCE, topic, p, ends[p])
                == raw_batches(cluster.DESTINATION, topic, p, ends[p])
                for p in ends
            )
        results.append(result)
        print(json.dumps(result), flush=True)
    return 0


def _fill(topic: str, args) -> None:
    from confluent_kafka import Producer

    producer = Producer(
        {
            "bootstrap.servers": cluster.SOURCE,
            "linger.ms": 5,
            "batch.size": 1_048_576,
            "acks": "all",
            "enable.idempotence": True,
            "compression.type": args.compression,
            "queue.buffering.max.kbytes": 1_048_576,
        }
    )
    # Values that compress as real ones do (not one repeated byte): words from a small set.
    words = [b"order", b"customer", b"amount", b"status", b"shipped", b"42", b"eur", b"2026"]
    values = [
        b" ".join(words[(i * 7 + j * i) % len(words)] for j in range(args.size))[: args.size]
        for i in range(97)
    ]
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
