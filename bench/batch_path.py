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
import struct
import subprocess
import sys
import time
from collections.abc import Iterator

from infra import kafka_wire, record_batches

from . import cluster, sections


class BatchCopier:
    """The batch path over one source topic: fetch, rewrite, produce (the engine's reading and
    writing without its bookkeeping: the least the batch path costs)."""

    def __init__(self, source: str, destination: str, topic: str, ends: dict[int, int]):
        self.reader, self.writer = _connect(source), _connect(destination)
        self.topic, self.ends = topic, ends
        self.producer_id, self.epoch = kafka_wire.init_producer_id(self.writer, 60)
        self.position = dict.fromkeys(ends, 0)
        self.sequence = dict.fromkeys(ends, 0)
        self.fetched = self.produced = self.batches = 0

    def left(self) -> bool:
        return any(self.position[p] < self.ends[p] for p in self.ends)

    def fetch(self) -> None:
        wanted = {
            (self.topic, p): self.position[p] for p in self.ends if self.position[p] < self.ends[p]
        }
        request = kafka_wire.fetch_request(wanted, 500, 32 << 20, 160 << 20)
        self.reader.send(request, kafka_wire.FETCH_RESPONSE, kafka_wire.FETCH_VERSION)

    def take(self) -> list[list[tuple[str, int, memoryview]]]:
        """The answer to the fetch asked for, its batches rewritten where they lie in its
        buffer: the i-th of every partition in round i."""
        _, _, body = self.reader.receive_raw()
        rounds: list[list[tuple[str, int, memoryview]]] = []
        for part in kafka_wire.fetched(body):
            assert part.error == 0, f"partition {part.partition}: error {part.error}"
            assert not part.aborted, "the prototype copies no aborted batches"
            self.fetched += part.records.nbytes
            for i, batch in enumerate(self._rewritten(part.partition, part.records)):
                if len(rounds) <= i:
                    rounds.append([])
                rounds[i].append((self.topic, part.partition, batch))
        return rounds

    def _rewritten(self, partition: int, records: memoryview) -> Iterator[memoryview]:
        for batch in record_batches.batches(records):
            self.position[partition] = batch.last + 1
            if batch.control:
                continue  # a transaction marker: the destination writes none
            record_batches.rewrite(
                batch.view, self.producer_id, self.epoch, self.sequence[partition]
            )
            self.sequence[partition] += batch.last - batch.base + 1
            yield batch.view

    def produce(self, rounds: list[list[tuple[str, int, memoryview]]]) -> None:
        """One batch per partition in each produce request (Kafka takes no more); all sent,
        then all answered."""
        for batches_of_round in rounds:
            parts = kafka_wire.produce_parts(self.writer.next_id, batches_of_round, 30000)
            self.writer.send_parts(parts, kafka_wire.PRODUCE_RESPONSE, kafka_wire.PRODUCE_VERSION)
            self.produced += sum(batch.nbytes for _, _, batch in batches_of_round)
            self.batches += len(batches_of_round)
        while self.writer.waiting:
            for _, partition, error, _, message in kafka_wire.produced(self.writer.receive()):
                assert error == 0, (partition, error, message)


def _connect(address: str) -> kafka_wire.Connection:
    return kafka_wire.Connection(address, kafka_wire.Settings.of({"bootstrap.servers": address}))


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
    connection, found, offset = _connect(address), [], 0
    while offset < end:
        request = kafka_wire.fetch_request({(topic, partition): offset}, 500, 16 << 20, 16 << 20)
        connection.send(request, kafka_wire.FETCH_RESPONSE, kafka_wire.FETCH_VERSION)
        records = next(kafka_wire.fetched(connection.receive_raw()[2])).records
        for batch in record_batches.batches(records):
            if batch.last >= offset:
                view = batch.view
                found.append((batch.base, bytes(view[21:43]) + bytes(view[57:])))
                offset = batch.last + 1
    connection.close()
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
    reader = _connect(cluster.SOURCE)
    request = kafka_wire.fetch_request({(topic, 0): 0}, 500, 1 << 20, 1 << 20)
    reader.send(request, kafka_wire.FETCH_RESPONSE, kafka_wire.FETCH_VERSION)
    records = next(kafka_wire.fetched(reader.receive_raw()[2])).records
    fetched = bytes(next(record_batches.batches(records)).view)
    assert int.from_bytes(fetched[57:61], "big") == 2, "the two records in one batch"

    def attempt(in_crc=None, outside_crc=None, twice: bool = False) -> int:
        """Produced by a new idempotent producer, changed by `in_crc` before the batch's CRC
        is made and by `outside_crc` after."""
        writer = _connect(cluster.DESTINATION)
        producer_id, epoch = kafka_wire.init_producer_id(writer, 60)
        first = bytearray(fetched)
        if in_crc:
            in_crc(first)
        record_batches.rewrite(memoryview(first), producer_id, epoch, 0)
        if outside_crc:
            outside_crc(first)
        sent = first
        if twice:
            second = bytearray(fetched)
            record_batches.rewrite(memoryview(second), producer_id, epoch, 2)
            sent = first + second
        parts = kafka_wire.produce_parts(writer.next_id, [(topic, 0, memoryview(sent))], 30000)
        writer.send_parts(parts, kafka_wire.PRODUCE_RESPONSE, kafka_wire.PRODUCE_VERSION)
        return next(kafka_wire.produced(writer.receive()))[2]

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
    # The first record's length (zigzag), then past it.
    length, pos = kafka_wire.uvarint(view, record_batches.HEADER)
    pos += length // 2
    _, pos = kafka_wire.uvarint(view, pos)  # the second record's length
    pos += 1  # its attributes
    _, pos = kafka_wire.uvarint(view, pos)  # its timestamp delta
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
offsets cannot be written as they are: the engine decodes those and writes their records in a
batch built again, translating the gaps (docs/mirror-engine.md).

Where the batch path's CPU goes (cProfile and `time`, uncompressed, on 2026-12-01): about 70 %
is the kernel's socket copies, the rest reading the fetch response and writing the produce
requests in Python; the CRC-32C of a GiB takes 0.03 s. A first version that let kafka-python
decode and encode the messages, and so copied each batch three times, took 1.1 CPU s per GiB.

The engine's batch path is built on this, and measured against the record path, MirrorMaker 2
and the raw client limit in the next section.
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
