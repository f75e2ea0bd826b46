"""A merge flow's copy in the engine, by the rules of `merging` (whose names the console shares:
it imports none of the copying): one part of a flow, copied by a thread the link's copier starts
in the slot holding it, each batch one Kafka transaction with how far it got."""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Protocol

from confluent_kafka import (
    OFFSET_BEGINNING,
    TIMESTAMP_NOT_AVAILABLE,
    Consumer,
    KafkaError,
    KafkaException,
    Message,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import ClusterMetadata

from infra import consuming
from infra.consuming import Consumed, Headers

from . import payloads, reading
from .merging import (
    ORIGIN,
    PROGRESS_TOPIC,
    Progress,
    Retry,
    origin_of,
    part_of,
    progress_key,
    progress_partition,
    provenance_prefix,
    read_progress,
    transactional_id,
)

log = logging.getLogger("spark_jobs.merging")  # its lines are the flow's, as they were

BATCH = 20_000  # records in one transaction at most (a commit costs 10-30 ms)
WAIT_S = 0.25
REFRESH_S = 10.0  # how often a flow looks for partitions its source gained
RETRY_S = [1, 2, 4, 8, 15]
TRANSACTION_TIMEOUT_MS = 30_000
RATE_WINDOW_S = 10.0  # a holder that died: its open transaction aborted by then

# What a flow produces: (topic, value, key, partition, timestamp, headers).
Record = tuple[str, bytes | None, bytes | None, int, int, Headers | None]
Delivered = Callable[[KafkaError | None, Message], None]


class Slot(Protocol):
    ended: bool

    def in_touch(self) -> bool:
        """Whether the slot heard from the control channel recently (else: write nothing)."""


class FlowCopy:
    """One merge flow, copied by a thread of its own until `stop`."""

    def __init__(self, link_spec: payloads.LinkSpec, flow: payloads.FlowPart, slot: Slot):
        self.source_config, self.destination_config = link_spec["source"], link_spec["destination"]
        self.flow, self.slot = flow, slot
        self.id = flow["id"]
        self.stopping = False
        self.records = self.skipped = self.bytes = 0
        self.last_write_ms = 0
        self.latency_ms = -1  # commit time less the newest copied record's timestamp
        self.window: deque[tuple[float, int]] = deque()  # (time, records) over RATE_WINDOW_S
        self.error = ""
        self.next: dict[int, int] = {}  # source partition -> next offset committed
        # One-to-one: source partition -> its exact checkpoint (next, dest), where known.
        self.checkpoint: dict[int, tuple[int, int]] = {}
        self.resumed: set[int] = set()  # partitions with progress when the copy (re)started
        # Destination partition -> the offset the flow's next record takes if nobody else
        # writes there (after its last record and the commit marker); unknown after a start.
        self.expected: dict[int, int] = {}
        self.others: set[int] = set()  # destination partitions others wrote to meanwhile
        self.high: dict[int, int] = {}  # source partition -> its high watermark last seen
        self.read: dict[int, int] = {}  # source partition -> the consumer's position
        self.prefixes: dict[int, bytes] = {}  # source partition -> its provenance's start
        name = f"flow-{flow['name']}-{flow.get('part', 0)}"
        self.thread = threading.Thread(target=self.run, name=name, daemon=True)

    # --- what the copier calls ----------------------------------------------------------------

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.stopping = True

    @property
    def ending(self) -> bool:
        return self.stopping or self.slot.ended

    def report(self) -> payloads.FlowReport:
        """What the slot reports of the flow (read from the copier's thread: copies first)."""
        nexts, read, high = dict(self.next), dict(self.read), dict(self.high)
        checkpoints = dict(self.checkpoint)
        one_to_one = self.flow["mapping"] == "one-to-one"
        partitions: dict[str, payloads.FlowPartitionReport] = {}
        for p, n in sorted(nexts.items()):
            part: payloads.FlowPartitionReport = {
                "next": n,
                "read": read.get(p, n),
                "source_hw": high.get(p, -1),
            }
            if one_to_one:
                part["checkpoint"], part["others"] = checkpoints.get(p), p in self.others
            partitions[str(p)] = part
        return {
            "records": self.records,
            "skipped": self.skipped,
            "bytes": self.bytes,
            "last_write_ms": self.last_write_ms,
            "latency_ms": self.latency_ms,
            "records_per_sec": self.rate(),
            "error": self.error,
            "partitions": partitions,
        }

    # --- the thread ---------------------------------------------------------------------------

    def run(self) -> None:
        failures = 0
        while not self.ending:
            copied = self.records + self.skipped
            try:
                self.copy()
            except Exception as exc:  # the flow's own trouble: said, then tried again
                self.error = _words(exc)
                log.warning("Flow %s: %s; starting again", self.flow["name"], self.error)
                # A copy that got on before failing starts again soon; one failing at once
                # waits longer each time.
                failures = 0 if self.records + self.skipped > copied else failures + 1
                deadline = time.monotonic() + RETRY_S[min(failures, len(RETRY_S) - 1)]
                while not self.ending and time.monotonic() < deadline:
                    time.sleep(0.1)
        log.info("Flow %s: stopped in this slot", self.flow["name"])

    def copy(self) -> None:
        """Copy from what was committed until stopped; raises to start again."""
        producer = Producer(
            {
                **self.destination_config,
                "transactional.id": transactional_id(
                    self.id, self.flow.get("part", 0), self.flow.get("parts", 1)
                ),
                "transaction.timeout.ms": TRANSACTION_TIMEOUT_MS,
                "linger.ms": 5,
                "partitioner": "murmur2_random",  # Java's default for keyed records
            }
        )
        consumer = None
        try:
            producer.init_transactions(60)  # fences an earlier holder, ends what it left open
            progress = {
                p: v
                for p, v in read_progress(self.destination_config, self.id).items()
                if part_of(p, self.flow)
            }
            self.next = {p: v["next"] for p, v in progress.items()}
            self.checkpoint = {
                p: (found[0], found[1])
                for p, v in progress.items()
                if (found := v.get("checkpoint"))
            }
            self.resumed, self.expected = set(progress), {}
            consumer = Consumer(
                {
                    **self.source_config,
                    "group.id": f"_isthmus-flow-{self.id}",  # never commits: a formality
                    "enable.auto.commit": False,
                    "enable.auto.offset.store": False,
                    "isolation.level": "read_committed",
                    "auto.offset.reset": "earliest",
                    **reading.FAST_FETCH,
                }
            )
            progress_partitions = self.partitions(producer, PROGRESS_TOPIC)
            where = progress_partition(self.id, progress_partitions)
            assigned: set[int] = set()
            refreshed = 0.0
            self.error = ""
            while not self.ending:
                if time.monotonic() - refreshed > REFRESH_S:
                    self.assign_new(consumer, producer, assigned)
                    refreshed = time.monotonic()
                if not self.slot.in_touch():  # cut off from the control channel: write nothing
                    time.sleep(WAIT_S)
                    continue
                batch = self.next_batch(consumer)
                if batch:
                    self.transfer(producer, batch, where)
                self.note_high_watermarks(consumer, assigned)
        finally:
            if consumer is not None:
                consumer.close()
            producer.flush(0)

    def partitions(self, client: Consumer | Producer, topic: str) -> int:
        metadata: ClusterMetadata = client.list_topics(topic, timeout=30)
        found = metadata.topics.get(topic)
        if found is None:
            raise Retry(f"topic {topic}: not found")
        if found.error is not None:
            raise Retry(f"topic {topic}: {found.error.str()}")
        return len(found.partitions)

    def assign_new(self, consumer: Consumer, producer: Producer, assigned: set[int]) -> None:
        """Read the source partitions not read yet (all, at first; then those it gained), each
        from where its copy was committed."""
        source, destination = self.flow["source"], self.flow["destination"]
        count = self.partitions(consumer, source)
        if self.flow["mapping"] == "one-to-one":
            has = self.partitions(producer, destination)
            if count > has:
                raise Retry(
                    f"source topic {source} has {count} partitions and destination topic "
                    f"{destination} {has}: partitions map one to one, so give {destination} "
                    f"{count} partitions"
                )
        new = [p for p in range(count) if p not in assigned and part_of(p, self.flow)]
        if new:
            consumer.incremental_assign(
                [TopicPartition(source, p, self.next.get(p, OFFSET_BEGINNING)) for p in new]
            )
            assigned.update(new)
            log.info(
                "Flow %s: copying %s into %s, %s",
                self.flow["name"],
                ", ".join(f"{source}[{p}] from {self.next.get(p, 'its start')}" for p in new),
                destination,
                "partition to partition" if self.flow["mapping"] == "one-to-one" else "by key",
            )

    def next_batch(self, consumer: Consumer) -> list[Consumed]:
        """The records fetched so far, up to BATCH, waiting up to WAIT_S for the first only:
        a transaction commits as soon as there is something to copy, so a slow source's
        records are not held back until a batch fills."""
        return [m for m in consuming.take(consumer, BATCH, WAIT_S) if self.readable(m)]

    def readable(self, msg: Consumed) -> bool:
        error = msg.error()
        if error is None:
            return True
        if error.code() == KafkaError._PARTITION_EOF:
            return False
        raise KafkaException(error)

    def transfer(self, producer: Producer, batch: list[Consumed], where: int) -> None:
        """One transaction: the batch's records (but those that came from the destination) and
        how far each source partition now is."""
        flow = self.flow
        failed: list[KafkaError] = []
        landed: dict[int, list[int]] = {}  # destination partition -> offsets of records there

        def delivered(err: KafkaError | None, msg: Message) -> None:
            if err is not None:
                failed.append(err)
            elif msg.topic() == flow["destination"]:
                partition, offset = msg.partition(), msg.offset()
                if partition is not None and offset is not None:  # set, once delivered
                    landed.setdefault(partition, []).append(offset)

        producer.begin_transaction()
        nexts, counts, skipped, size, newest = self.send_records(producer, batch, delivered)
        copied = sum(counts.values())
        progress: dict[int, Progress] = {
            p: {"next": n, "checkpoint": self.checkpoint.get(p)} for p, n in nexts.items()
        }
        self.send_progress(producer, progress, where, delivered)
        try:
            producer.commit_transaction(60)
        except KafkaException as exc:
            if exc.args[0].txn_requires_abort():
                producer.abort_transaction(60)
            raise Retry(f"a transaction did not commit ({_words(exc)})") from exc
        if failed:  # commit would have failed; checked for what it says
            raise Retry(f"records were not delivered: {failed[0].str()}")
        if flow["mapping"] == "one-to-one":
            self.note_writers(landed, counts)
            self.note_checkpoints(nexts, landed)
        self.next = {**self.next, **nexts}
        self.note_copied(copied, skipped, size, newest)

    def note_copied(self, copied: int, skipped: int, size: int, newest: int) -> None:
        self.records += copied
        self.skipped += skipped
        self.bytes += size
        if copied:
            self.last_write_ms = int(time.time() * 1000)
            self.latency_ms = max(0, self.last_write_ms - newest)
        self.window.append((time.monotonic(), self.records))

    def send_progress(
        self, producer: Producer, progress: dict[int, Progress], where: int, delivered: Delivered
    ) -> None:
        """How far each source partition is, in the same transaction as its records."""
        at = int(time.time() * 1000)
        for partition, value in progress.items():
            record = json.dumps({**value, "at": at}).encode()
            key = progress_key(self.id, partition)
            self.when_room(producer, (PROGRESS_TOPIC, record, key, where, 0, None), delivered)

    def send_records(
        self, producer: Producer, batch: list[Consumed], delivered: Delivered
    ) -> tuple[dict[int, int], dict[int, int], int, int, int]:
        """Produce the batch's records but those from the destination, each with its
        provenance added and its timestamp (0: none, the producer's clock): (each source
        partition's next offset, records copied per partition, skipped, their bytes, the newest
        timestamp). One to one, the first and last record of each partition report where they
        landed (`delivered`): each partition's latest record is held back until the next comes
        or the batch ends. No other record calls back (a failed one fails the commit). One pass
        and few calls per record: this loop is what bounds a flow's records/s."""
        home, topic = self.flow["destination_cluster_id"], self.flow["destination"]
        one_to_one = self.flow["mapping"] == "one-to-one"
        produce, prefixes = producer.produce, self.prefixes
        nexts: dict[int, int] = {}
        counts: dict[int, int] = {}
        held: dict[int, Record] = {}  # partition -> its latest record, not produced yet
        skipped = size = newest = 0
        for msg in batch:
            partition, offset = msg.partition(), msg.offset()
            nexts[partition] = offset + 1
            kind, timestamp = msg.timestamp()
            if timestamp > newest:
                newest = timestamp
            headers = msg.headers()
            origin = origin_of(headers) if headers else None
            if origin == home:
                skipped += 1  # the loop rule: it was written there first
                continue
            if origin is None:
                prefix = prefixes.get(partition) or self.prefix(partition)
                here = (ORIGIN, prefix + b"%d,%d" % (offset, timestamp))
                headers = [*headers, here] if headers else [here]
            value, key = msg.value(), msg.key()
            size += (len(value) if value else 0) + (len(key) if key else 0)
            record: Record = (
                topic,
                value,
                key,
                partition if one_to_one else -1,  # -1: the partitioner's choice
                0 if kind == TIMESTAMP_NOT_AVAILABLE else timestamp,
                headers,
            )
            first = partition not in counts
            counts[partition] = counts.get(partition, 0) + 1
            callback = delivered if one_to_one and first else None
            if one_to_one and not first:
                earlier, held[partition] = held.get(partition), record
                if earlier is None:
                    continue  # the partition's second: held until the next comes
                record = earlier
            try:
                produce(*record[:4], on_delivery=callback, timestamp=record[4], headers=record[5])
            except BufferError:  # the local queue is full: let deliveries drain it
                self.when_room(producer, record, callback)
        for record in held.values():
            self.when_room(producer, record, delivered)
        return nexts, counts, skipped, size, newest

    def prefix(self, partition: int) -> bytes:
        """The start of the provenance of the source partition's records, made once."""
        made = provenance_prefix(self.flow["source_cluster_id"], self.flow["source"], partition)
        self.prefixes[partition] = made
        return made

    def when_room(self, producer: Producer, record: Record, callback: Delivered | None) -> None:
        """Produce (topic, value, key, partition, timestamp, headers) once there is room."""
        while True:
            try:
                producer.produce(
                    *record[:4], on_delivery=callback, timestamp=record[4], headers=record[5]
                )
                return
            except BufferError:
                producer.poll(0.05)

    def note_checkpoints(self, nexts: dict[int, int], landed: dict[int, list[int]]) -> None:
        """Each partition's exact checkpoint once its transaction committed: where its last
        record landed; else, nothing landed since the last one, the same place (or, nothing
        ever copied from it, 0). A partition resumed without one waits for a record."""
        for partition, next_offset in nexts.items():
            if partition in landed:
                dest = max(landed[partition]) + 1
            elif (found := self.checkpoint.get(partition)) and found[0] == self.next.get(partition):
                dest = found[1]
            elif partition not in self.resumed and partition not in self.checkpoint:
                dest = 0
            else:
                continue
            self.checkpoint[partition] = (next_offset, dest)

    def note_writers(self, landed: dict[int, list[int]], counts: dict[int, int]) -> None:
        """Note destination partitions where records of others lie between the flow's own: its
        `counts[p]` records of one transaction follow each other, and the next transaction's
        first comes right after the commit marker (one offset)."""
        for partition, offsets in landed.items():
            first, last = min(offsets), max(offsets)
            expected = self.expected.get(partition, first)
            if first != expected or last - first + 1 != counts[partition]:
                if partition not in self.others:
                    log.info(
                        "Flow %s: others write to %s[%d] too",
                        self.flow["name"],
                        self.flow["destination"],
                        partition,
                    )
                self.others.add(partition)
            self.expected[partition] = last + 2

    def rate(self) -> float:
        """Records copied per second over the last RATE_WINDOW_S."""
        now = time.monotonic()
        while self.window and now - self.window[0][0] > RATE_WINDOW_S:
            self.window.popleft()
        if len(self.window) < 2:
            return 0.0
        (first, was), (last, now_records) = self.window[0], self.window[-1]
        return round((now_records - was) / max(last - first, 1e-9), 1)

    def note_high_watermarks(self, consumer: Consumer, assigned: set[int]) -> None:
        """Each partition's high watermark (from the fetches) and how far it was read: the
        position passes transaction markers, which no record takes, so a partition copied to
        its end reads as such."""
        topic = self.flow["source"]
        for tp in consumer.position([TopicPartition(topic, p) for p in assigned]):
            if tp.offset >= 0:
                self.read[tp.partition] = tp.offset
        for p in assigned:
            _, high = consumer.get_watermark_offsets(TopicPartition(topic, p), cached=True)
            if high >= 0:
                self.high[p] = high


def _words(exc: BaseException) -> str:
    if isinstance(exc, KafkaException) and exc.args and isinstance(exc.args[0], KafkaError):
        return exc.args[0].str()
    return str(exc)
