"""A copier task: one of the long-running Spark tasks of a link's application.

Each task owns a set of mirror partitions (its *assignment*, written by the application's
driver in Redis) and copies them continuously: a confluent-kafka consumer reads the source
partitions (`read_committed`), an idempotent producer writes every record to the same
partition of its mirror, keeping key, value (null and empty apart), headers, timestamp and
order. No micro-batches: a record is written as soon as it is read.

Exactly once without changing the brokers:
- A partition (re)starts from where the destination ends: its end offset, and the offset
  translation (see `translation`) for the source offset that comes next.
- Where a source offset is not the one expected (a gap: compaction, retention, transaction
  markers), the translation entry is stored before the record it describes.
- Never two writers: a task writes only while it hears from the control channel and its epoch
  is current (see `docs/mirror-engine.md`, "No zombie writes"); the first record written to a
  partition after each (re)start is checked to land at the offset expected.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import redis
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from infra.kafka_admin import KafkaAdmin, KafkaAdminError

from . import control, translation

log = logging.getLogger("spark_jobs.copier")

CONTROL_S = 0.2  # how often a task reads its assignment and the epoch
BEAT_S = 1.0  # how often it reports
CONTACT_S = 3.0  # a task that has not heard from the control channel this long stops writing
BEAT_TTL_MS = 6_000  # a task's heartbeat key outlives its last beat this long
BATCH = 10_000  # records taken from the consumer's queue at a time
IDLE_WAIT_S = 0.1  # the longest a task waits for a record (a record ends the wait at once)
DRAIN_S = 30.0  # the longest a task waits for its queued records to be delivered
MAX_RESETS = 6  # trouble this many times in a row without copying a record: the task fails


class Fenced(RuntimeError):
    """The task may not write: its epoch ended or the control channel went quiet."""


@dataclass(eq=False)  # one per partition start: compared by identity
class Cursor:
    """One mirror partition the task copies."""

    mirror: str
    source: str
    topic_id: str
    partition: int
    runs: translation.Runs
    next_source: int  # the source offset expected next
    dest_next: int  # the destination offset the next record gets
    verify: bool = True  # check where the first records after a (re)start land

    @property
    def ident(self) -> tuple[str, str, int]:
        return (self.mirror, self.topic_id, self.partition)


@dataclass
class Counters:
    records: int = 0
    bytes: int = 0
    last_write_ms: int = 0
    errors: list[str] = field(default_factory=list)


def run_slots(slots: Iterator[int], spec: dict, epoch: str) -> None:
    """The Spark task: copy the partitions assigned to each slot (one per task) until the
    epoch ends."""
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    for slot in slots:
        Copier(spec, epoch, slot).run()


class Copier:
    def __init__(self, spec: dict, epoch: str, slot: int):
        self.spec = spec
        self.link_id = spec["link_id"]
        self.epoch, self.slot = epoch, slot
        self.redis = redis.Redis.from_url(
            spec["redis_url"], socket_timeout=1, socket_connect_timeout=1
        )
        self.consumer = Consumer(
            {
                **spec["source"],
                "group.id": f"_isthmus-link-{self.link_id}",  # never commits: a formality
                "enable.auto.commit": False,
                "enable.auto.offset.store": False,
                "isolation.level": "read_committed",
                # A position no longer on the source (retention) resumes at its log start:
                # a gap, translated like any other.
                "auto.offset.reset": "earliest",
                "fetch.wait.max.ms": 100,
                # Fetches large enough, and a queue deep enough, that a task catching up does
                # not wait for records (measured: ~20% more records/s than with librdkafka's
                # defaults); and a full queue's partitions are fetched again 10 ms after it has
                # room, not 1 s.
                "max.partition.fetch.bytes": 4 * 2**20,
                "fetch.max.bytes": 100 * 2**20,
                "queued.max.messages.kbytes": 131_072,
                "fetch.queue.backoff.ms": 10,
            }
        )
        self.producer: Producer | None = None
        self.entries = Producer({**spec["destination"], "acks": "all", "enable.idempotence": True})
        self.admin = KafkaAdmin(spec["destination"], timeout=15)
        self.cursors: dict[tuple[str, int], Cursor] = {}  # (source topic, partition)
        self.runs: dict[tuple[str, str, int], translation.Runs] = {}  # kept across resets
        self.known: set[str] = set()  # source topics whose metadata the consumer has
        self.counters = Counters()
        self.version = -1  # the assignment version applied
        self.assignment: dict | None = None
        self.last_contact = time.monotonic()
        self.next_control = self.next_beat = 0.0
        self.resets, self.retry_at = 0, 0.0
        self.error = ""
        self.ended = False

    # --- the loop ---------------------------------------------------------------------------

    def run(self) -> None:
        log.info("Task %d of link %s (epoch %s) started", self.slot, self.link_id, self.epoch)
        try:
            while not self.ended:
                now = time.monotonic()
                if now >= self.next_control:
                    self.control(now)
                if self.ended:
                    break
                if now >= self.next_beat:
                    self.beat()
                if not self.prepare_to_write():
                    time.sleep(CONTROL_S)
                    continue
                try:
                    self.copy()
                except (KafkaException, KafkaAdminError, translation.StoreFailed, Fenced) as exc:
                    self.reset(str(exc))
            self.finish()
        finally:
            self.close()

    def prepare_to_write(self) -> bool:
        """Stop writing (dropping what is held) once the control channel has been silent too
        long, take up a newer assignment, and say whether there is anything to copy now."""
        if time.monotonic() - self.last_contact > CONTACT_S:
            if self.cursors:
                self.reset(
                    "the control channel (Redis) has not answered for "
                    f"{CONTACT_S:.0f} s; writing stops until it does"
                )
            return False
        if time.monotonic() < self.retry_at:
            return False
        if self.assignment is not None and self.version < self.assignment["version"]:
            self.apply(self.assignment)
        return bool(self.cursors)

    # --- control ----------------------------------------------------------------------------

    def control(self, now: float) -> None:
        self.next_control = now + CONTROL_S
        try:
            epoch, raw = self.redis.mget(
                control.epoch_key(self.link_id), control.assignment_key(self.link_id, self.slot)
            )
        except redis.RedisError:
            return  # `prepare_to_write` stops writing once this has lasted CONTACT_S
        if epoch is not None and epoch.decode() != self.epoch:
            log.info("Task %d of link %s: epoch %s ended", self.slot, self.link_id, self.epoch)
            self.ended = True
            return
        self.last_contact = now
        assignment = json.loads(raw) if raw else None
        if assignment is not None and assignment.get("epoch") == self.epoch:
            self.assignment = assignment

    def apply(self, assignment: dict) -> None:
        """Take up a new assignment: stop the partitions it leaves out (every record of theirs
        delivered first), start the ones it adds."""
        wanted = {(p["mirror"], p["topic_id"], p["partition"]): p for p in assignment["partitions"]}
        removed = [c for c in self.cursors.values() if c.ident not in wanted]
        if removed:
            self.drain()
            self.consumer.incremental_unassign(
                [TopicPartition(c.source, c.partition) for c in removed]
            )
            for c in removed:
                del self.cursors[c.source, c.partition]
                self.runs.pop(c.ident, None)
        held = {c.ident for c in self.cursors.values()}
        added = [p for ident, p in wanted.items() if ident not in held]
        if added:
            self.start(added)
        self.version = assignment["version"]
        self.next_beat = 0.0  # acknowledge at once

    def start(self, parts: list[dict]) -> None:
        """Start copying `parts`, each from where its mirror partition ends."""
        ends = self.admin.offsets([(p["mirror"], p["partition"]) for p in parts])
        for topic in {p["source"] for p in parts} - self.known:
            # Without its metadata at hand, the consumer starts fetching a new topic only after
            # its next metadata refresh, about a second later.
            self.consumer.list_topics(topic, timeout=10)
            self.known.add(topic)
        positions = []
        for p in parts:
            ident = (p["mirror"], p["topic_id"], p["partition"])
            end = ends[p["mirror"], p["partition"]]
            known = self.runs.get(ident) or translation.Runs(
                [translation.Entry(s, d) for s, d in p["runs"]]
            )
            runs = self.runs[ident] = known.upto(end)
            cursor = Cursor(
                p["mirror"],
                p["source"],
                p["topic_id"],
                p["partition"],
                runs,
                runs.next_source(end),
                end,
            )
            self.cursors[p["source"], p["partition"]] = cursor
            positions.append(TopicPartition(p["source"], p["partition"], cursor.next_source))
        self.consumer.incremental_assign(positions)
        log.info(
            "Task %d of link %s: copying %s",
            self.slot,
            self.link_id,
            ", ".join(f"{tp.topic}[{tp.partition}] from {tp.offset}" for tp in positions),
        )

    # --- copying ----------------------------------------------------------------------------

    def copy(self) -> None:
        # Whole milliseconds, rounded up: the client truncates the timeout to them, and a wait
        # cut short of the next control read would spin on zero-length polls until it is due.
        wait = math.ceil(max(self.next_control - time.monotonic(), 0) * 1000) / 1000
        first = self.consumer.poll(min(IDLE_WAIT_S, wait))
        if first is None:
            self.check_deliveries()
            return
        batch = [first, *self.consumer.consume(BATCH - 1, 0)]
        chosen, gaps = [], []
        for msg in batch:
            if msg.error() is not None:
                self.note_read_error(msg)
                continue
            cursor = self.cursors.get((msg.topic(), msg.partition()))
            if cursor is None:
                continue  # a partition just taken off this task
            offset = msg.offset()
            if offset < cursor.next_source:
                continue  # already in the destination
            if offset != cursor.next_source:
                gaps.append((cursor, translation.Entry(offset, cursor.dest_next)))
            cursor.next_source = offset + 1
            cursor.dest_next += 1
            chosen.append((cursor, msg))
        if gaps:
            self.store(gaps)
        self.write(chosen)

    def write(self, chosen: list) -> None:
        producer = self.producer or self.new_producer()
        produce, size, started = producer.produce, 0, set()
        for cursor, msg in chosen:
            value, key = msg.value(), msg.key()
            size += (len(value) if value else 0) + (len(key) if key else 0)
            if cursor.verify:
                started.add(cursor)
            try:
                produce(
                    cursor.mirror,
                    value,
                    key,
                    cursor.partition,
                    timestamp=msg.timestamp()[1],
                    headers=msg.headers(),
                )
            except BufferError:  # the local queue is full: let deliveries drain it
                self.when_room(
                    lambda c=cursor, m=msg, v=value, k=key: produce(
                        c.mirror,
                        v,
                        k,
                        c.partition,
                        timestamp=m.timestamp()[1],
                        headers=m.headers(),
                    )
                )
        self.counters.records += len(chosen)
        self.counters.bytes += size
        if started:
            self.verify(started)
        if chosen:
            self.counters.last_write_ms = int(time.time() * 1000)
            self.resets, self.error = 0, ""  # copying again: earlier trouble is over
        self.check_deliveries()

    def when_room(self, send) -> None:
        """`send()` once the producer's queue has room, serving control meanwhile."""
        while True:
            self.producer.poll(0.05)
            self.check_deliveries()
            self.keep_in_touch()
            try:
                send()
                return
            except BufferError:
                continue

    def verify(self, started: set[Cursor]) -> None:
        """The first records written to a partition since it (re)started landed where expected:
        once they are delivered, the partition ends exactly after them. Anything else means
        another writer, and this task stops rather than write on."""
        self.drain()
        ends = self.admin.offsets([(c.mirror, c.partition) for c in started])
        for cursor in started:
            cursor.verify = False
            end = ends[cursor.mirror, cursor.partition]
            if end != cursor.dest_next:
                raise Fenced(
                    f"{cursor.mirror}[{cursor.partition}] ends at offset {end}, not "
                    f"{cursor.dest_next}: something else writes this mirror partition"
                )

    def keep_in_touch(self) -> None:
        """While blocked on a full queue: keep serving the control channel, and stop writing
        as soon as the task may not."""
        now = time.monotonic()
        if now >= self.next_control:
            self.control(now)
        if now >= self.next_beat:
            self.beat()
        if self.ended:
            raise Fenced(f"epoch {self.epoch} ended")
        if now - self.last_contact > CONTACT_S:
            raise Fenced(f"the control channel has not answered for {CONTACT_S:.0f} s")

    def on_delivery_error(self, err, msg) -> None:
        self.counters.errors.append(f"{msg.topic()}[{msg.partition()}]: {err.str()}")

    def check_deliveries(self) -> None:
        if self.producer is not None:
            self.producer.poll(0)
        if self.counters.errors:
            first, count = self.counters.errors[0], len(self.counters.errors)
            self.counters.errors.clear()
            raise KafkaException(
                KafkaError(KafkaError._FAIL, f"{count} record(s) not written as expected: {first}")
            )

    def store(self, gaps: list[tuple[Cursor, translation.Entry]]) -> None:
        """Store translation entries, and only then count them (the records follow)."""
        failed = []
        for cursor, entry in gaps:
            self.entries.produce(
                translation.TOPIC,
                key=translation.key(cursor.topic_id, cursor.partition),
                value=translation.encode(entry),
                on_delivery=lambda err, _: err and failed.append(err.str()),
            )
        if self.entries.flush(30) or failed:
            raise translation.StoreFailed(
                f"Could not store offset translation entries in {translation.TOPIC}: "
                f"{failed or 'timed out'}"
            )
        for cursor, entry in gaps:
            cursor.runs.add(entry)

    def note_read_error(self, msg) -> None:
        err = msg.error()
        if err.code() == KafkaError._PARTITION_EOF:
            return
        if err.fatal():
            raise KafkaException(err)
        self.error = f"reading {msg.topic()}[{msg.partition()}]: {err.str()}"

    def new_producer(self) -> Producer:
        """The task's writer: idempotent with the gap-less guarantee, so a record that fails
        makes the producer fail instead of writing the records after it."""
        self.producer = Producer(
            {
                "linger.ms": 2,
                "batch.size": 1_000_000,
                "queue.buffering.max.kbytes": 131_072,
                "queue.buffering.max.messages": 1_000_000,
                **self.spec["destination"],
                "acks": "all",
                "enable.idempotence": True,
                "enable.gapless.guarantee": True,
                "delivery.report.only.error": True,
                "on_delivery": self.on_delivery_error,
            }
        )
        return self.producer

    # --- trouble and endings ------------------------------------------------------------------

    def drain(self, timeout: float = DRAIN_S) -> None:
        """Wait until every record handed to the producer is delivered; give up (and stop
        writing) when that takes too long or the control channel goes quiet meanwhile."""
        deadline = time.monotonic() + timeout
        while self.producer is not None and self.producer.flush(0.5) > 0:
            # Ask before judging the silence: a task that was busy elsewhere is not cut off.
            if not self.ended:
                self.control(time.monotonic())
            self.beat()
            if time.monotonic() - self.last_contact > CONTACT_S:
                raise Fenced("the control channel went quiet while records were in flight")
            if time.monotonic() > deadline:
                raise Fenced(f"records were still undelivered after {timeout:.0f} s")
        self.check_deliveries()

    def reset(self, why: str) -> None:
        """Stop writing: drop queued records, give up the producer, and start every partition
        again from the destination after a pause."""
        self.resets += 1
        self.error = why.splitlines()[0]
        log.warning(
            "Task %d of link %s: %s; restarting its partitions", self.slot, self.link_id, self.error
        )
        if self.resets > MAX_RESETS:
            raise RuntimeError(f"task {self.slot} failed {MAX_RESETS} times in a row: {why}")
        self.discard_producer()
        if self.cursors:
            self.consumer.incremental_unassign(
                [TopicPartition(c.source, c.partition) for c in self.cursors.values()]
            )
        self.cursors.clear()
        self.counters.errors.clear()
        self.version = -1  # applies its assignment again, from the destination
        self.retry_at = time.monotonic() + min(2 ** (self.resets - 1), 30)

    def discard_producer(self) -> None:
        if self.producer is None:
            return
        self.producer.purge(in_queue=True, in_flight=False)
        self.producer.flush(5)  # requests already sent: wait for their answers
        self.producer = None

    def finish(self) -> None:
        """The epoch ended: deliver what is queued, then say this task writes no more."""
        try:
            self.drain()
        except (Fenced, KafkaException) as exc:
            log.warning(
                "Task %d of link %s ended with records undelivered: %s",
                self.slot,
                self.link_id,
                exc,
            )
            self.discard_producer()
        with contextlib.suppress(redis.RedisError):  # else it expires by itself
            self.redis.delete(control.task_key(self.link_id, self.epoch, self.slot))

    def close(self) -> None:
        self.consumer.close()
        self.discard_producer()

    # --- reporting ----------------------------------------------------------------------------

    def beat(self) -> None:
        self.next_beat = time.monotonic() + BEAT_S
        tps = [TopicPartition(c.source, c.partition) for c in self.cursors.values()]
        positions = {(tp.topic, tp.partition): tp.offset for tp in self.consumer.position(tps)}
        partitions = {}
        for key, c in self.cursors.items():
            last = c.runs.last()
            partitions[f"{c.partition}/{c.mirror}"] = {
                "run": [last.source, last.destination],
                "translated": c.runs.translated,
                "next_source": c.next_source,
                "read_upto": max(positions.get(key, -1), c.next_source),
            }
        report = {
            "epoch": self.epoch,
            "slot": self.slot,
            "pid": os.getpid(),
            "version": self.version,
            "state": "copying" if self.cursors else "waiting",
            "error": self.error,
            "records": self.counters.records,
            "bytes": self.counters.bytes,
            "last_write_ms": self.counters.last_write_ms,
            "partitions": partitions,
        }
        sent = time.monotonic()
        try:
            self.redis.set(
                control.task_key(self.link_id, self.epoch, self.slot),
                json.dumps(report),
                px=BEAT_TTL_MS,
            )
        except redis.RedisError:
            return
        self.last_contact = max(self.last_contact, sent)
