"""A link's copier in one slot of the engine: a thread of the slot's Spark task that copies
the link's mirror partitions the slot holds, reading them through the slot's consumer of the
link's source (`source_readers`: shared with the slot's other links that read that source with
the same settings) and writing with the link's own producer, and starts and stops a thread for
each of the link's merge flows the slot holds (`flow_copy`).

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
  that writer may have had in flight (`MirrorWriter.settle_s`), so its end offset is where it
  really ends.

This module is the thread and its assignment; what a batch's records become is `cursors`, and
their writes, where the rules above are kept, `mirror_writer`. This is the record path; the
batch path's copier (`batch_copier.BatchCopier`) is this class with another reader and
writer. Its clients come from factories
(`copier_clients`), so the rules are tested without Kafka.
"""

from __future__ import annotations

import contextlib
import logging
import math
import threading
import time
import uuid
from typing import Protocol

from confluent_kafka import KafkaError, KafkaException, Producer, TopicPartition

from infra.consuming import Consumed
from infra.kafka_admin import KafkaAdmin
from infra.kafka_errors import KafkaAdminError

from . import flow_copy, merging, payloads, schema_gate, source_readers, translation
from .copier_clients import AdminFactory, DestinationAdmin, ProducerFactory, SourceFactory
from .cursors import Cursor, Holds, choose, reports, unpause
from .mirror_writer import CONTACT_S, DRAIN_S, Counters, Fenced, MirrorWriter

__all__ = ["CONTACT_S", "DRAIN_S", "Copier", "Cursor", "Fenced", "Slot"]

log = logging.getLogger("spark_jobs.copier")

BATCH = 10_000  # records taken from the consumer's queue at a time
# The longest a copier waits for a record (a record ends the wait at once, and so do a new
# assignment and a stop): short after a record or a change; once nothing has come for
# QUIET_POLLS waits, until its next report is due (IDLE_REPORT_S), so that many idle links
# cost little.
WAIT_S = 0.25
IDLE_WAIT_S = 1.0  # with nothing to copy: how often it looks whether it may start again
QUIET_POLLS = 4
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


class Copier:
    """One link's partitions in one slot. `run` is the thread's body; the slot hands it
    assignments (`assign`), asks it to stop (`stop`), and reads `report`.

    Its clients, each from a config dict: `consumer` (the source's; by default the slot's
    shared one, `slot.readers.view`), `producer` (confluent-kafka's by default) and `admin`
    (the destination's; by default the slot's shared one, `slot.destination_admin`)."""

    path = "record"
    writer_class = MirrorWriter  # the batch path's copier writes with its own

    def __init__(
        self,
        spec: payloads.LinkSpec,
        slot: Slot,
        number: int,
        *,
        consumer: SourceFactory | None = None,
        producer: ProducerFactory = Producer,
        admin: AdminFactory | None = None,
    ):
        self.spec = spec
        self.link_id = spec["link_id"]
        self.slot, self.number = slot, number
        self.run_id = uuid.uuid4().hex[:8]  # this copier's counters start at 0
        # The slot's consumer of this source, shared with its other links that read it alike.
        source: SourceFactory = consumer or slot.readers.view
        self.consumer = source(spec["source"])
        self.admin_of: AdminFactory = admin or slot.destination_admin
        self.writer = self.writer_class(spec["destination"], self, self.destination_admin, producer)
        self.counters: Counters = self.writer.counters  # the slot reads its last write
        self.cursors: dict[tuple[str, int], Cursor] = {}  # (source topic, partition)
        # The parts of the link's merge flows held here, by merging.part_key.
        self.flows: dict[str, flow_copy.FlowCopy] = {}
        self.runs: dict[tuple[str, str, int], translation.Runs] = {}  # kept across resets
        self.known: set[str] = set()  # source topics whose metadata the consumer has
        schemas = spec.get("schemas")
        self.holds = (
            Holds(schema_gate.Gate(schemas), self.consumer, self.link_id) if schemas else None
        )
        self.done = False
        self.version = -1  # the assignment version applied
        self.assignment: payloads.Assignment | None = None  # the newest, from the slot
        self.woken = threading.Event()  # a new assignment, or the end
        self.empty_polls = 0  # waits in a row that brought no record
        self.stopping = False  # the link left the slot: deliver what is queued and stop
        self.resets, self.retry_at = 0, 0.0
        self.error = ""
        self.failure = ""  # why the copier gave up, once it has
        self.report: payloads.CopierReport = self.reported()
        self.reported_as: tuple[object, ...] = ()
        self.next_report = self.report_due = 0.0

    # --- what the slot calls --------------------------------------------------------------

    def assign(self, assignment: payloads.Assignment) -> None:
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

    # --- what its writer calls ----------------------------------------------------------------

    def in_touch(self) -> bool:
        return self.slot.in_touch()

    def keep_reporting(self) -> None:
        if time.monotonic() >= self.next_report:
            self.refresh_report()

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

    def apply(self, assignment: payloads.Assignment) -> None:
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
            unpause(self.consumer, removed)
            self.writer.drain()
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

    def apply_flows(self, flows: list[payloads.FlowPart]) -> None:
        """Stop the merge flows no longer held here (each ends its transaction first), start
        those new here: each runs in a thread of its own."""
        wanted = {merging.part_key(f): f for f in flows}
        self.stop_flows([key for key in self.flows if key not in wanted])
        for key, flow in wanted.items():
            if key not in self.flows:
                self.flows[key] = flow_copy.FlowCopy(self.spec, flow, self.slot)
                self.flows[key].start()

    def stop_flows(self, ids: list[str]) -> None:
        stopping = [self.flows.pop(i) for i in ids]
        for flow in stopping:
            flow.stop()
        deadline = time.monotonic() + DRAIN_S
        for flow in stopping:
            flow.thread.join(max(0.0, deadline - time.monotonic()))

    def start(self, parts: list[payloads.PartitionEntry]) -> None:
        """Start copying `parts`, each from where its mirror partition ends."""
        began = time.monotonic()
        names = [self.writer_name(p["topic_id"], p["partition"]) for p in parts]
        if self.slot.unclean(names) and self.writer.replicated({p["mirror"] for p in parts}):
            self.writer.settle(names)
        self.slot.writing(names)
        ends = self.writer.ends([(p["mirror"], p["partition"]) for p in parts])
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
        self.writer.warm_up()
        log.info(
            "Link %s, slot %d: copying %s on the %s path (started in %.2f s)",
            self.link_id,
            self.number,
            ", ".join(f"{tp.topic}[{tp.partition}] from {tp.offset}" for tp in positions),
            self.path,
            time.monotonic() - began,
        )

    def writer_name(self, topic_id: str, partition: int) -> str:
        """How the slot notes a partition this copier writes (`Slot.writing`)."""
        return f"{self.link_id}|{topic_id}|{partition}"

    def destination_admin(self) -> DestinationAdmin:
        return self.admin_of(self.spec["destination"])

    # --- copying ----------------------------------------------------------------------------

    def copy(self) -> None:
        # Whole milliseconds, rounded up: the client truncates the timeout to them, and a wait
        # cut short of the next report would spin on zero-length polls until it is due.
        wait = math.ceil(max(self.next_report - time.monotonic(), 0) * 1000) / 1000
        holds = self.holds
        held = [c for c in self.cursors.values() if c.hold is not None] if holds else []
        if holds and held and time.monotonic() - holds.checked >= HOLD_CHECK_S:
            holds.release(held)
        quiet = self.empty_polls >= QUIET_POLLS and not held
        batch = self.consumer.take(
            BATCH, max(wait, 0.001) if quiet else min(WAIT_S, max(wait, 0.001))
        )
        writer = self.writer
        if not batch:
            self.empty_polls += 1
            writer.check_deliveries()
            return
        self.empty_polls = 0
        if self.ending or not self.slot.in_touch():
            return  # read, never written: the partitions start again from the destination
        chosen, gaps = choose(batch, self.cursors, holds, self.note_read_error)
        if gaps:
            writer.store(gaps)  # each entry stored before its record is handed over
        writer.write(chosen)
        if chosen:
            self.resets, self.error = 0, ""  # copying again: earlier trouble is over
        writer.check_deliveries()

    def note_read_error(self, msg: Consumed, err: KafkaError) -> None:
        if err.code() == KafkaError._PARTITION_EOF:
            return
        if err.fatal():
            raise KafkaException(err)
        self.error = f"reading {msg.topic()}[{msg.partition()}]: {err.str()}"

    # --- trouble and endings ------------------------------------------------------------------

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
        self.writer.discard()
        if self.cursors:
            unpause(self.consumer, list(self.cursors.values()))
            self.consumer.incremental_unassign(
                [TopicPartition(c.source, c.partition) for c in self.cursors.values()]
            )
        self.cursors.clear()
        self.counters.errors.clear()
        self.version = -1  # applies its assignment again, from the destination
        self.retry_at = time.monotonic() + min(2 ** (self.resets - 1), 30)

    def finish(self) -> None:
        """Stopped, or the slot's epoch ended: deliver what is queued, then write no more."""
        try:
            self.writer.drain()
            ended = [self.writer_name(c.topic_id, c.partition) for c in self.cursors.values()]
            self.slot.writing(ended, cleanly_ended=True)
        except (Fenced, KafkaException) as exc:
            log.warning(
                "Link %s, slot %d ended with records undelivered: %s",
                self.link_id,
                self.number,
                exc,
            )
            self.writer.discard()
        self.cursors.clear()

    def close(self) -> None:
        self.stop_flows(list(self.flows))
        self.cursors.clear()
        self.writer.discard()
        self.consumer.close()
        self.writer.close()

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

    def reported(self) -> payloads.CopierReport:
        """What the slot reports of this copier (built in the copier's thread, which alone
        changes its cursors)."""
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
            "queued": self.writer.queued(),
            "partitions": reports(self.cursors, self.consumer),
            "flows": {i: flow.report() for i, flow in self.flows.items()},
        }


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""
