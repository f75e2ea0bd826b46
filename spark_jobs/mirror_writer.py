"""A mirror copier's writes into its link's destination, under the engine's exactly-once rules
(docs/mirror-engine.md, "Where a partition resumes" and "No zombie writes"). Apart from the
copier's thread (`copier`: assignments, reading, resets, reports) so that the rules have one
home, tested with in-memory clients (tests/unit/test_exactly_once.py):

- a translation entry is stored, and its storing waited for, before the record it describes is
  handed to the producer (`store`, then `write`);
- the first records written to a partition after each (re)start must land where its cursor
  expects: anything else means another writer, and the copier stops (`verify`);
- nothing is written once the copier may not write (stopped, its slot's epoch ended, the control
  channel silent): each wait on the destination checks it (`when_room`, `drain`);
- a partition whose last writer did not end cleanly starts only once the destination settled
  what that writer may have left in flight (`settle`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Protocol

from confluent_kafka import KafkaError, KafkaException, Message, Producer

from infra.kafka_errors import KafkaAdminError

from . import translation
from .copier_clients import DestinationAdmin, ProducerFactory
from .cursors import Chosen, Cursor, Gaps

log = logging.getLogger("spark_jobs.copier")  # its lines are the copier's

CONTACT_S = 3.0  # a slot that has not heard from the control channel this long stops writing
DRAIN_S = 30.0  # the longest a copier waits for its queued records to be delivered
SETTLE_MARGIN_S = 2.0  # beyond the destination's own bound, for its fetches and elections
# The copier's producer: its batching, which a destination's client config may change, and
# what its exactly-once rules rely on, which nothing changes (`new_producer`).
WRITER_TUNING = {
    "linger.ms": 2,
    "batch.size": 1_000_000,
    "queue.buffering.max.kbytes": 131_072,
    "queue.buffering.max.messages": 1_000_000,
}
WRITER_GUARANTEES = {
    "acks": "all",
    "enable.idempotence": True,
    "enable.gapless.guarantee": True,
    "delivery.report.only.error": True,
}


class Fenced(RuntimeError):
    """The copier may not write: it was stopped, its slot's epoch ended, or the control
    channel went quiet."""


class Copier(Protocol):
    """What the writer needs of its copier while it waits on the destination."""

    link_id: str
    number: int  # its slot's

    @property
    def ending(self) -> bool:
        """Stopped, or its slot's epoch ended: deliver what is queued and write nothing new."""

    def in_touch(self) -> bool:
        """Whether its slot heard from the control channel within CONTACT_S."""

    def keep_reporting(self) -> None:
        """Refresh the copier's report if it is due (a wait may last seconds)."""


@dataclass
class Counters:
    records: int = 0
    bytes: int = 0
    last_write_ms: int = 0
    errors: list[str] = field(default_factory=list)  # records not delivered, since last checked


class MirrorWriter:
    """One copier's producers (records, and translation entries) and the destination's admin."""

    def __init__(
        self,
        destination: dict[str, str],
        copier: Copier,
        admin: Callable[[], DestinationAdmin],
        producers: ProducerFactory = Producer,
    ):
        self.destination, self.copier = destination, copier
        self.admin, self.producers = admin, producers
        self.producer: Producer | None = None
        self.entries: Producer | None = None
        self.counters = Counters()
        self.settle_wait: float | None = None  # see `settle_s`

    def write(self, chosen: Chosen) -> None:
        """Hand each record to the producer, for the same partition of its mirror; then check
        where the first records of each partition (re)started land."""
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
                    producer,
                    partial(
                        produce,
                        cursor.mirror,
                        value,
                        key,
                        cursor.partition,
                        timestamp=msg.timestamp()[1],
                        headers=msg.headers(),
                    ),
                )
        self.counters.records += len(chosen)
        self.counters.bytes += size
        if started:
            self.verify(started)
        if chosen:
            self.counters.last_write_ms = int(time.time() * 1000)

    def when_room(self, producer: Producer, send: Callable[[], None]) -> None:
        """`send()` once the producer's queue has room, stopping as soon as the copier may
        not write."""
        copier = self.copier
        while True:
            producer.poll(0.05)
            self.check_deliveries()
            copier.keep_reporting()
            if copier.ending:
                raise Fenced("the copier was stopped")
            if not copier.in_touch():
                raise Fenced(f"the control channel has not answered for {CONTACT_S:.0f} s")
            try:
                send()
                return
            except BufferError:
                continue

    def verify(self, started: set[Cursor]) -> None:
        """The first records written to a partition since it (re)started landed where expected:
        once they are delivered, the partition ends exactly after them. Anything else means
        another writer, and this copier stops rather than write on."""
        self.drain()
        ends = self.ends([(c.mirror, c.partition) for c in started])
        for cursor in started:
            cursor.verify = False
            end = ends[cursor.mirror, cursor.partition]
            if end != cursor.dest_next:
                raise Fenced(
                    f"{cursor.mirror}[{cursor.partition}] ends at offset {end}, not "
                    f"{cursor.dest_next}: something else writes this mirror partition"
                )

    def ends(self, partitions: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
        """Where each mirror partition ends now (its high watermark)."""
        return self.admin().offsets(partitions)

    def store(self, gaps: Gaps) -> None:
        """Store translation entries, and only then count them (the records follow)."""
        if self.entries is None:
            self.entries = self.producers(
                {**self.destination, "acks": "all", "enable.idempotence": True}
            )
        failed: list[str] = []

        def delivered(err: KafkaError | None, _: Message) -> None:
            if err is not None:
                failed.append(err.str())

        for cursor, entry in gaps:
            self.entries.produce(
                translation.TOPIC,
                key=translation.key(cursor.topic_id, cursor.partition),
                value=translation.encode(entry),
                on_delivery=delivered,
            )
        if self.entries.flush(30) or failed:
            raise translation.StoreFailed(
                f"Could not store offset translation entries in {translation.TOPIC}: "
                f"{failed or 'timed out'}"
            )
        for cursor, entry in gaps:
            cursor.runs.add(entry)

    def on_delivery_error(self, err: KafkaError, msg: Message) -> None:
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

    def new_producer(self) -> Producer:
        """The copier's writer: idempotent with the gap-less guarantee, so a record that fails
        makes the producer fail instead of writing the records after it. Kept while the copier
        is idle: each new one is a new producer id, whose state every partition it writes
        keeps for a day (`producer.id.expiration.ms`), so a copier making one per burst of a
        trickling source would swell the destination brokers' memory."""
        self.producer = self.producers(
            {
                **WRITER_TUNING,
                **self.destination,
                **WRITER_GUARANTEES,
                "on_delivery": self.on_delivery_error,
            }
        )
        return self.producer

    def warm_up(self) -> None:
        """Make the producer now, while the first records are fetched: a new idempotent
        producer takes 0.3-1 s to get its producer id before it can write its first record."""
        if self.producer is None:
            self.new_producer().poll(0)

    def queued(self) -> int:
        return len(self.producer) if self.producer is not None else 0

    # --- before a partition starts ------------------------------------------------------------

    def replicated(self, topics: set[str]) -> bool:
        """Whether any partition of these mirror topics has followers (with one replica, the
        leader's end is the high watermark: nothing waits above it)."""
        try:
            return any(
                len(p.replicas) > 1
                for topic in topics
                for p in self.admin().partition_replicas(topic)
            )
        except KafkaAdminError:
            return True

    def settle(self, names: list[str]) -> None:
        """An earlier writer of these partitions ended without every record it sent answered:
        one it sent may sit on the partition's leader above the high watermark, waiting for a
        follower that died or lags, and be committed later, after records written from the end
        offset read now. Each is settled (committed, or dropped by a new leader) once that
        follower is fenced or leaves the in-sync set: wait that long before reading where the
        partition ends."""
        wait = self.settle_s()
        log.warning(
            "Link %s, slot %d: the last writer of %s did not end cleanly; waiting %.0f s for "
            "the destination to settle what it may have sent",
            self.copier.link_id,
            self.copier.number,
            ", ".join(names),
            wait,
        )
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if self.copier.ending:
                raise Fenced("the copier was stopped")
            time.sleep(min(0.2, max(0.0, deadline - time.monotonic())))

    def settle_s(self) -> float:
        """How long the destination may hold a record above its high watermark: the longer of
        a dead broker's fencing (broker.session.timeout.ms) and a lagging follower's leaving
        the in-sync set (replica.lag.time.max.ms), with a margin; Kafka's defaults if it
        cannot be asked."""
        if self.settle_wait is None:
            defaults = {"broker.session.timeout.ms": 9_000, "replica.lag.time.max.ms": 30_000}
            try:
                found = self.admin().broker_configs(list(defaults))
                longest = max(int(found.get(n) or d) for n, d in defaults.items())
            except (KafkaAdminError, ValueError):
                longest = max(defaults.values())
            self.settle_wait = longest / 1000 + SETTLE_MARGIN_S
        return self.settle_wait

    # --- stopping -------------------------------------------------------------------------------

    def drain(self, timeout: float = DRAIN_S) -> None:
        """Wait until every record handed to the producer is delivered; give up (and stop
        writing) when that takes too long or the control channel goes quiet meanwhile."""
        deadline = time.monotonic() + timeout
        while self.producer is not None and self.producer.flush(0.5) > 0:
            self.copier.keep_reporting()
            if not self.copier.in_touch():
                raise Fenced("the control channel went quiet while records were in flight")
            if time.monotonic() > deadline:
                raise Fenced(f"records were still undelivered after {timeout:.0f} s")
        self.check_deliveries()

    def discard(self) -> None:
        """Stop writing: drop the records still queued, and give up the producer."""
        if self.producer is None:
            return
        self.producer.purge(in_queue=True, in_flight=False)
        self.producer.flush(5)  # requests already sent: wait for their answers
        self.producer = None

    def close(self) -> None:
        """The copier ended: its entries' producer too (the records' was discarded)."""
        if self.entries is not None:
            self.entries.flush(5)
            self.entries = None
