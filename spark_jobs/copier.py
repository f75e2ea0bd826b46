"""A link's copier in one slot of the engine: a thread of the slot's Spark task that copies
the link's mirror partitions the slot holds, reading them through the slot's consumer of the
link's source (`source_readers`: shared with the slot's other links that read that source with
the same settings) and writing with the link's own producer, and starts and stops a thread for
each of the link's merge flows the slot holds (`merging`).

Each copier owns a set of mirror partitions (its *assignment*, written by the engine's driver
in Redis and handed over by its slot) and copies them continuously: a confluent-kafka consumer
reads the source partitions (`read_committed`), an idempotent producer writes every record to
the same partition of its mirror, keeping key, value (null and empty apart), headers, timestamp
and order. No micro-batches: a record is written as soon as it is read.

Exactly once without changing the brokers:
- A partition (re)starts from where the destination ends: its end offset, and the offset
  translation (see `translation`) for the source offset that comes next.
- Where a source offset is not the one expected (a gap: compaction, retention, transaction
  markers), the translation entry is stored before the record it describes.
- Never two writers: a copier writes only while its slot hears from the control channel and
  the slot's epoch is current (see `docs/mirror-engine.md`, "No zombie writes"); the first
  record written to a partition after each (re)start is checked to land at the offset expected.
- No record before its schema, for a link that syncs schemas (`schema_gate`): a partition
  whose next record names a schema id the destination's registry lacks holds at that record.
- Nothing an earlier writer sent surfaces later: a partition whose last writer did not end
  cleanly (killed, cut off, reset) starts only once the destination has settled every record
  that writer may have had in flight (`settle_s`), so its end offset is where it really ends.
"""

from __future__ import annotations

import contextlib
import logging
import math
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Protocol

from confluent_kafka import KafkaError, KafkaException, Message, Producer, TopicPartition

from infra.consuming import Consumed
from infra.kafka_admin import KafkaAdmin, KafkaAdminError

from . import control, merging, schema_gate, source_readers, translation

log = logging.getLogger("spark_jobs.copier")

CONTACT_S = 3.0  # a slot that has not heard from the control channel this long stops writing
BATCH = 10_000  # records taken from the consumer's queue at a time
# The longest a copier waits for a record (a record ends the wait at once, and so do a new
# assignment and a stop): short after a record or a change; once nothing has come for
# QUIET_POLLS waits, until its next report is due (IDLE_REPORT_S), so that many idle links
# cost little.
WAIT_S = 0.25
IDLE_WAIT_S = 1.0  # with nothing to copy: how often it looks whether it may start again
QUIET_POLLS = 4
DRAIN_S = 30.0  # the longest a copier waits for its queued records to be delivered
SETTLE_MARGIN_S = 2.0  # beyond the destination's own bound, for its fetches and elections
MAX_RESETS = 6  # trouble this many times in a row without copying a record: the copier fails
HOLD_CHECK_S = 0.5  # how often a partition held for a schema looks whether it came
REPORT_S = 1.0  # how often a copier refreshes its report when something changed
IDLE_REPORT_S = 5.0  # and when nothing did
# An unchanged report is built again (a read position moved past a transaction marker shows no
# other way) every IDLE_REPORT_S, that much more for each this many partitions: at 5,000 a build
# cost a slot 3% of a core.
REPORT_PARTITIONS = 1_000


class Slot(Protocol):
    """What a copier needs of the slot that runs it."""

    ended: bool  # the slot's epoch ended: deliver what is queued and stop
    readers: source_readers.Readers  # its consumers, shared by source

    def destination_admin(self, config: dict[str, str]) -> KafkaAdmin:
        """Its admin client for a destination, shared by the copiers that write it alike."""

    def in_touch(self) -> bool:
        """Whether the slot heard from the control channel within CONTACT_S."""

    def report_soon(self) -> None:
        """Report at once (an assignment was taken up)."""

    def unclean(self, partitions: list[str]) -> bool:
        """Whether a writer of any of these partitions may have left records in flight."""

    def writing(self, partitions: list[str], cleanly_ended: bool = False) -> None:
        """Note that a copier begins writing these partitions, or ended them cleanly."""


class Fenced(RuntimeError):
    """The copier may not write: it was stopped, its slot's epoch ended, or the control
    channel went quiet."""


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


@dataclass
class Counters:
    records: int = 0
    bytes: int = 0
    last_write_ms: int = 0
    errors: list[str] = field(default_factory=list)


class Copier:
    """One link's partitions in one slot. `run` is the thread's body; the slot hands it
    assignments (`assign`), asks it to stop (`stop`), and reads `report`."""

    def __init__(self, spec: control.LinkSpec, slot: Slot, number: int):
        self.spec = spec
        self.link_id = spec["link_id"]
        self.slot, self.number = slot, number
        self.run_id = uuid.uuid4().hex[:8]  # this copier's counters start at 0
        # The slot's consumer of this source, shared with its other links that read it alike.
        self.consumer = slot.readers.view(spec["source"])
        self.producer: Producer | None = None
        self.entries: Producer | None = None
        self.settle_wait: float | None = None  # see `settle_s`
        self.cursors: dict[tuple[str, int], Cursor] = {}  # (source topic, partition)
        # The parts of the link's merge flows held here, by merging.part_key.
        self.flows: dict[str, merging.FlowCopy] = {}
        self.runs: dict[tuple[str, str, int], translation.Runs] = {}  # kept across resets
        self.known: set[str] = set()  # source topics whose metadata the consumer has
        schemas = spec.get("schemas")
        self.gate = schema_gate.Gate(schemas) if schemas else None
        self.holds_checked = 0.0
        self.done = False
        self.counters = Counters()
        self.version = -1  # the assignment version applied
        self.assignment: control.Assignment | None = None  # the newest, from the slot
        self.woken = threading.Event()  # a new assignment, or the end
        self.empty_polls = 0  # waits in a row that brought no record
        self.stopping = False  # the link left the slot: deliver what is queued and stop
        self.resets, self.retry_at = 0, 0.0
        self.error = ""
        self.failure = ""  # why the copier gave up, once it has
        self.report: control.CopierReport = self.reported()
        self.reported_as: tuple[object, ...] = ()
        self.next_report = self.report_due = 0.0

    # --- what the slot calls --------------------------------------------------------------

    def assign(self, assignment: control.Assignment) -> None:
        if self.assignment is None or assignment["version"] != self.assignment["version"]:
            self.assignment = assignment
            self.wake()

    def stop(self) -> None:
        self.stopping = True
        self.wake()

    def wake(self) -> None:
        self.woken.set()
        self.consumer.wake()

    @property
    def ending(self) -> bool:
        return self.stopping or self.slot.ended

    # --- the loop ---------------------------------------------------------------------------

    def run(self) -> None:
        log.info("Link %s: copier in slot %d started", self.link_id, self.number)
        try:
            while not self.ending:
                if time.monotonic() >= self.next_report:
                    self.refresh_report()
                if not self.prepare_to_write():
                    self.woken.wait(IDLE_WAIT_S)
                    self.woken.clear()
                    continue
                try:
                    self.copy()
                except (KafkaException, KafkaAdminError, translation.StoreFailed, Fenced) as exc:
                    self.reset(str(exc))
            self.finish()
        except Exception as exc:  # the slot notes it and starts the link's copier again later
            self.failure = _first_line(str(exc)) or type(exc).__name__
            log.warning("Link %s: copier in slot %d failed: %s", self.link_id, self.number, exc)
        finally:
            self.close()
            self.refresh_report(force=True)
            self.done = True  # it writes nothing more: its slot may forget it
            self.slot.report_soon()

    def prepare_to_write(self) -> bool:
        """Stop writing (dropping what is held) once the slot's control channel has been silent
        too long, take up a newer assignment, and say whether there is anything to copy now."""
        if not self.slot.in_touch():
            if self.cursors:
                self.reset(
                    "the control channel (Redis) has not answered for "
                    f"{CONTACT_S:.0f} s; writing stops until it does"
                )
            return False
        if time.monotonic() < self.retry_at:
            return False
        assignment = self.assignment
        if assignment is not None and self.version < assignment["version"]:
            self.apply(assignment)
        return bool(self.cursors)

    def apply(self, assignment: control.Assignment) -> None:
        """Take up a new assignment: stop the partitions it leaves out (every record of theirs
        delivered first), start the ones it adds."""
        self.apply_flows([p["flow"] for p in assignment["partitions"] if "flow" in p])
        wanted = {
            (p["mirror"], p["topic_id"], p["partition"]): p
            for p in assignment["partitions"]
            if "flow" not in p
        }
        removed = [c for c in self.cursors.values() if c.ident not in wanted]
        if removed:
            self.unpause(removed)
            self.drain()
            self.slot.writing(
                [self.writer_name(c.topic_id, c.partition) for c in removed], cleanly_ended=True
            )
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
        self.empty_polls = 0
        self.refresh_report(force=True)
        self.slot.report_soon()  # acknowledge at once

    def apply_flows(self, flows: list[control.FlowPart]) -> None:
        """Stop the merge flows no longer held here (each ends its transaction first), start
        those new here: each runs in a thread of its own."""
        wanted = {merging.part_key(f): f for f in flows}
        self.stop_flows([key for key in self.flows if key not in wanted])
        for key, flow in wanted.items():
            if key not in self.flows:
                self.flows[key] = merging.FlowCopy(self.spec, flow, self.slot)
                self.flows[key].start()

    def stop_flows(self, ids: list[str]) -> None:
        stopping = [self.flows.pop(i) for i in ids]
        for flow in stopping:
            flow.stop()
        deadline = time.monotonic() + DRAIN_S
        for flow in stopping:
            flow.thread.join(max(0.0, deadline - time.monotonic()))

    def start(self, parts: list[control.PartitionEntry]) -> None:
        """Start copying `parts`, each from where its mirror partition ends."""
        began = time.monotonic()
        names = [self.writer_name(p["topic_id"], p["partition"]) for p in parts]
        if self.slot.unclean(names) and self.replicated({p["mirror"] for p in parts}):
            self.settle(names)
        self.slot.writing(names)
        ends = self.destination_ends([(p["mirror"], p["partition"]) for p in parts])
        new = {p["source"] for p in parts} - self.known
        # Without its metadata at hand, the consumer starts fetching a new topic only after
        # its next metadata refresh, about a second later: asked for at once for one new topic
        # (a new mirror's first record). Many new topics are left to that refresh: a request
        # for a whole cluster's metadata (10,000 partitions) timed out, failing the copier.
        if len(new) == 1:
            with contextlib.suppress(KafkaException):  # then at that refresh
                self.consumer.list_topics(next(iter(new)), timeout=5)
        self.known |= new
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
        if self.producer is None:
            # Made now, while the first records are fetched: a new idempotent producer takes
            # 0.3-1 s to get its producer id before it can write its first record.
            self.new_producer().poll(0)
        log.info(
            "Link %s, slot %d: copying %s (started in %.2f s)",
            self.link_id,
            self.number,
            ", ".join(f"{tp.topic}[{tp.partition}] from {tp.offset}" for tp in positions),
            time.monotonic() - began,
        )

    def writer_name(self, topic_id: str, partition: int) -> str:
        """How the slot notes a partition this copier writes (`Slot.writing`)."""
        return f"{self.link_id}|{topic_id}|{partition}"

    def replicated(self, topics: set[str]) -> bool:
        """Whether any partition of these mirror topics has followers (with one replica, the
        leader's end is the high watermark: nothing waits above it)."""
        try:
            return any(
                len(p.replicas) > 1
                for topic in topics
                for p in self.destination_admin().partition_replicas(topic)
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
            self.link_id,
            self.number,
            ", ".join(names),
            wait,
        )
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if self.ending:
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
                found = self.destination_admin().broker_configs(list(defaults))
                longest = max(int(found.get(n) or d) for n, d in defaults.items())
            except (KafkaAdminError, ValueError):
                longest = max(defaults.values())
            self.settle_wait = longest / 1000 + SETTLE_MARGIN_S
        return self.settle_wait

    # --- copying ----------------------------------------------------------------------------

    def copy(self) -> None:
        # Whole milliseconds, rounded up: the client truncates the timeout to them, and a wait
        # cut short of the next report would spin on zero-length polls until it is due.
        wait = math.ceil(max(self.next_report - time.monotonic(), 0) * 1000) / 1000
        gate = self.gate
        held = [c for c in self.cursors.values() if c.hold is not None] if gate else []
        if gate and held and time.monotonic() - self.holds_checked >= HOLD_CHECK_S:
            self.release(gate, held)
        quiet = self.empty_polls >= QUIET_POLLS and not held
        batch = self.consumer.take(
            BATCH, max(wait, 0.001) if quiet else min(WAIT_S, max(wait, 0.001))
        )
        if not batch:
            self.empty_polls += 1
            self.check_deliveries()
            return
        self.empty_polls = 0
        if self.ending or not self.slot.in_touch():
            return  # read, never written: the partitions start again from the destination
        chosen, gaps = self.choose(batch)
        if gaps:
            self.store(gaps)
        self.write(chosen)

    def choose(
        self, batch: list[Consumed]
    ) -> tuple[list[tuple[Cursor, Consumed]], list[tuple[Cursor, translation.Entry]]]:
        """The records to write, each with its cursor, and the gaps before them to store."""
        chosen: list[tuple[Cursor, Consumed]] = []
        gaps: list[tuple[Cursor, translation.Entry]] = []
        gate = self.gate
        for msg in batch:
            if (error := msg.error()) is not None:
                self.note_read_error(msg, error)
                continue
            cursor = self.cursors.get((msg.topic(), msg.partition()))
            if cursor is None or cursor.hold is not None:
                continue  # a partition just taken off this copier, or one held for a schema
            offset = msg.offset()
            if offset < cursor.next_source:
                continue  # already in the destination
            if gate is not None:
                ids = schema_gate.schema_ids(msg.key(), msg.value())
                if ids and not ids <= gate.passed and self.held(gate, cursor, offset, ids):
                    continue
            if offset != cursor.next_source:
                gaps.append((cursor, translation.Entry(offset, cursor.dest_next)))
            cursor.next_source = offset + 1
            cursor.dest_next += 1
            chosen.append((cursor, msg))
        return chosen, gaps

    def held(self, gate: schema_gate.Gate, cursor: Cursor, offset: int, ids: set[int]) -> bool:
        """Hold the partition at this record if the destination lacks one of its schemas;
        whether it did."""
        waiting = gate.waiting(ids)
        if not waiting:
            return False
        cursor.hold = Hold(offset, waiting, int(time.time() * 1000))
        self.consumer.pause([TopicPartition(cursor.source, cursor.partition)])
        self.holds_checked = time.monotonic()
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

    def release(self, gate: schema_gate.Gate, held: list[Cursor]) -> None:
        """Let each held partition go on from the record it held at, once its schemas came."""
        self.holds_checked = time.monotonic()
        for cursor in held:
            hold = cursor.hold
            if hold is None:
                continue
            hold.waiting = gate.waiting(set(hold.waiting))
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
            self.unpause([cursor], at=True)

    def unpause(self, cursors: list[Cursor], at: bool = False) -> None:
        """Resume held partitions (`at`: from the record each held at)."""
        for cursor in cursors:
            if cursor.hold is None:
                continue
            tp = TopicPartition(cursor.source, cursor.partition, cursor.hold.offset)
            if at:
                self.consumer.seek(tp)
            self.consumer.resume([tp])
            cursor.hold = None

    def write(self, chosen: list[tuple[Cursor, Consumed]]) -> None:
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
            self.resets, self.error = 0, ""  # copying again: earlier trouble is over
        self.check_deliveries()

    def when_room(self, producer: Producer, send: Callable[[], None]) -> None:
        """`send()` once the producer's queue has room, stopping as soon as the copier may
        not write."""
        while True:
            producer.poll(0.05)
            self.check_deliveries()
            if time.monotonic() >= self.next_report:
                self.refresh_report()
            if self.ending:
                raise Fenced("the copier was stopped")
            if not self.slot.in_touch():
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
        ends = self.destination_ends([(c.mirror, c.partition) for c in started])
        for cursor in started:
            cursor.verify = False
            end = ends[cursor.mirror, cursor.partition]
            if end != cursor.dest_next:
                raise Fenced(
                    f"{cursor.mirror}[{cursor.partition}] ends at offset {end}, not "
                    f"{cursor.dest_next}: something else writes this mirror partition"
                )

    def destination_admin(self) -> KafkaAdmin:
        return self.slot.destination_admin(self.spec["destination"])

    def destination_ends(self, partitions: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
        return self.destination_admin().offsets(partitions)

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

    def store(self, gaps: list[tuple[Cursor, translation.Entry]]) -> None:
        """Store translation entries, and only then count them (the records follow)."""
        if self.entries is None:
            self.entries = Producer(
                {**self.spec["destination"], "acks": "all", "enable.idempotence": True}
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

    def note_read_error(self, msg: Consumed, err: KafkaError) -> None:
        if err.code() == KafkaError._PARTITION_EOF:
            return
        if err.fatal():
            raise KafkaException(err)
        self.error = f"reading {msg.topic()}[{msg.partition()}]: {err.str()}"

    def new_producer(self) -> Producer:
        """The copier's writer: idempotent with the gap-less guarantee, so a record that fails
        makes the producer fail instead of writing the records after it. Kept while the copier
        is idle: each new one is a new producer id, whose state every partition it writes
        keeps for a day (`producer.id.expiration.ms`), so a copier making one per burst of a
        trickling source would swell the destination brokers' memory."""
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
            if time.monotonic() >= self.next_report:
                self.refresh_report()
            if not self.slot.in_touch():
                raise Fenced("the control channel went quiet while records were in flight")
            if time.monotonic() > deadline:
                raise Fenced(f"records were still undelivered after {timeout:.0f} s")
        self.check_deliveries()

    def reset(self, why: str) -> None:
        """Stop writing: drop queued records, give up the producer, and start every partition
        again from the destination after a pause."""
        self.resets += 1
        self.error = _first_line(why)
        log.warning(
            "Link %s, slot %d: %s; restarting its partitions", self.link_id, self.number, self.error
        )
        if self.resets > MAX_RESETS:
            raise RuntimeError(f"failed {MAX_RESETS} times in a row: {self.error}")
        self.discard_producer()
        if self.cursors:
            self.unpause(list(self.cursors.values()))
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
        """Stopped, or the slot's epoch ended: deliver what is queued, then write no more."""
        try:
            self.drain()
            ended = [self.writer_name(c.topic_id, c.partition) for c in self.cursors.values()]
            self.slot.writing(ended, cleanly_ended=True)
        except (Fenced, KafkaException) as exc:
            log.warning(
                "Link %s, slot %d ended with records undelivered: %s",
                self.link_id,
                self.number,
                exc,
            )
            self.discard_producer()
        self.cursors.clear()

    def close(self) -> None:
        self.stop_flows(list(self.flows))
        self.cursors.clear()
        self.discard_producer()
        self.consumer.close()
        if self.entries is not None:
            self.entries.flush(5)
            self.entries = None

    # --- reporting ----------------------------------------------------------------------------

    def refresh_report(self, force: bool = False) -> None:
        """Build the report again when something changed since the last one (an idle copier
        only every IDLE_REPORT_S)."""
        now = time.monotonic()
        quiet = self.empty_polls >= QUIET_POLLS and not force
        self.next_report = now + (IDLE_REPORT_S if quiet else REPORT_S)
        flows = [(f.records, f.skipped, f.error) for f in self.flows.values()]
        holds = [(c.ident, sorted(c.hold.waiting)) for c in self.cursors.values() if c.hold]
        changed = (self.counters.records, self.version, len(self.cursors), self.error, flows, holds)
        if not force and changed == self.reported_as and now < self.report_due:
            return
        again = IDLE_REPORT_S * max(1, len(self.cursors) // REPORT_PARTITIONS)
        self.reported_as, self.report_due = changed, now + again
        self.report = self.reported()

    def reported(self) -> control.CopierReport:
        """What the slot reports of this copier (built in the copier's thread, which alone
        changes its cursors)."""
        partitions: dict[str, control.PartitionReport] = {}
        cursors = list(self.cursors.items())
        if cursors:
            tps = [TopicPartition(c.source, c.partition) for _, c in cursors]
            positions = {(tp.topic, tp.partition): tp.offset for tp in self.consumer.position(tps)}
            for key, c in cursors:
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
        busy = self.cursors or self.flows
        state = "failed" if self.failure else "copying" if busy else "waiting"
        return {
            "slot": self.number,
            "run": self.run_id,
            "version": self.version,
            "state": state,
            "error": self.failure or self.error,
            "records": self.counters.records,
            "bytes": self.counters.bytes,
            "last_write_ms": self.counters.last_write_ms,
            "queued": len(self.producer) if self.producer is not None else 0,
            "partitions": partitions,
            "flows": {i: flow.report() for i, flow in self.flows.items()},
        }


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""
