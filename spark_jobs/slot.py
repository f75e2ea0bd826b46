"""A slot of the engine: one long-running Spark task that copies mirror partitions of any link.

For each slot the driver writes an epoch and, per link, the partitions the slot copies (see
`control`). The slot reads both every CONTROL_S. For each link with partitions here it runs a
copier thread (`copier.Copier`, with that link's own producer and credentials), hands it the
link's assignment, and stops the copiers of links that left. The copiers of links that read
one source with the same settings share the slot's consumer of it (`source_readers`). So a link
added to the engine adds a thread and a producer, not processes or consumers, and a link in
trouble (its source down, its password wrong, its copier failing) holds only its own thread
and its own source's consumer: the other links' copiers go on.

A copier that fails is started again after a pause, in the same epoch (it stopped writing
before it ended); after `len(RESTART_S) + 1` failures in a row the slot gives up on that link
and reports it, and the console fails the link. The slot reports every copier in one key each
second, kept alive by expiry.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

import redis

from infra.kafka_admin import KafkaAdmin

from . import batch_copier, control, copier, payloads, shared_clients, source_readers
from .payloads import Assignment

log = logging.getLogger("spark_jobs.slot")

# How often a slot reads its epoch and assignments while a copier of it writes: each read is
# the contact that lets its copiers write (copier.CONTACT_S), so a busy slot reads often, and a
# Redis that answers slowly a few times does not cut it off. While none writes, once a second:
# a change to them wakes it at once anyway (see control.Wakeup).
CONTROL_S = 0.2
IDLE_CONTROL_S = 1.0
BUSY_MS = 5_000  # a copier that wrote this recently keeps its slot busy
BEAT_S = 1.0  # how often it reports
BEAT_TTL_MS = 6_000  # a slot's report outlives its last beat this long
RESTART_S = [1, 2, 4, 8, 15]  # pauses before a link's failed copier starts again
HEALTHY_AFTER_S = 60  # a copier running this long forgives its link's earlier failures


def run_slots(slots: Iterator[int], spec: payloads.SlotSpec, epoch: str) -> None:
    """The Spark task: run the slot (one per task) until its epoch ends."""
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    from pyspark import TaskContext  # Spark's, on any executor

    context = TaskContext.get()
    if context is not None and context.attemptNumber() > 0:
        # Spark runs a task again, past spark.task.maxFailures=1, when its executor's worker
        # was lost (not the application's fault). In the same epoch it would start writing at
        # once, beside the old task if that one is cut off rather than dead: failing here fails
        # the job, and the engine relaunches the slot in a new epoch, after the old one.
        raise RuntimeError(f"the copier slot's task ran again (attempt {context.attemptNumber()})")
    for number in slots:
        SlotTask(spec, number, epoch).run()


@dataclass
class Failures:
    """A link whose copier failed in this slot."""

    digest: str  # of the spec it failed with: a changed spec starts afresh
    count: int
    error: str
    retry_at: float

    @property
    def given_up(self) -> bool:
        return self.count > len(RESTART_S)


@dataclass
class Running:
    copier: copier.Copier
    thread: threading.Thread
    incarnation: tuple[str, int]  # the spec's digest, and how often the link restarted it
    started: float


class SlotTask:
    def __init__(self, spec: payloads.SlotSpec, number: int, epoch: str):
        self.engine, self.key = spec["engine"], spec["key"]
        self.number, self.epoch = number, epoch
        self.redis = control.client(spec["redis_url"], 1, spec.get("redis_sentinels"))
        self.copiers: dict[str, Running] = {}
        self.failures: dict[str, Failures] = {}
        self.wanted: dict[str, payloads.Assignment] = {}  # link -> its assignment in this epoch
        # Each link's assignment as sent, and as parsed.
        self.read: dict[control.Raw, payloads.Assignment] = {}
        self.last_contact = time.monotonic()
        self.ended = False
        self.next_beat = 0.0
        self.tell_engine = False  # a copier applied a new plan: wake the engine with the report
        self.reported: tuple[object, ...] = ()  # what the last report was made of (see `beat`)
        self.wakeup = control.Wakeup(self.redis, control.slots_wake_channel(self.engine))
        self.readers = source_readers.Readers(f"slot-{number}")
        self.admins = shared_clients.Shared(lambda config: KafkaAdmin(config, timeout=15))
        self.error = ""

    # --- what copiers call ----------------------------------------------------------------

    def in_touch(self) -> bool:
        return time.monotonic() - self.last_contact <= copier.CONTACT_S

    def destination_admin(self, config: dict[str, str]) -> KafkaAdmin:
        """One admin client per destination and settings for the slot's copiers (a new
        client's first request took up to 3 s here, a new link's first record waiting)."""
        return self.admins.get(config)

    def unclean(self, partitions: list[str]) -> bool:
        """Whether a writer of any of these partitions may have left records in flight: it
        began and did not end cleanly (or Redis cannot say)."""
        try:
            return any(self.redis.hmget(control.writers_key(self.engine), partitions))
        except redis.RedisError:
            return True

    def writing(self, partitions: list[str], cleanly_ended: bool = False) -> None:
        """Note that a copier begins writing these partitions, or ended them cleanly."""
        key = control.writers_key(self.engine)
        with contextlib.suppress(redis.RedisError):  # unknown counts as unclean
            if cleanly_ended:
                self.redis.hdel(key, *partitions)
            else:
                self.redis.hset(key, mapping=dict.fromkeys(partitions, self.epoch))

    def report_soon(self) -> None:
        """A copier took up a new plan: report it, and wake the engine with it, at once."""
        self.next_beat = 0.0
        self.tell_engine = True
        control.wake(self.redis, control.slots_wake_channel(self.engine))

    # --- the loop ---------------------------------------------------------------------------

    def run(self) -> None:
        log.info("Slot %d (epoch %s) started", self.number, self.epoch)
        try:
            while not self.ended:
                began = time.monotonic()
                self.control(began)
                if self.ended:
                    break
                self.tend(began)
                if time.monotonic() >= self.next_beat:
                    self.beat()
                self.wakeup.wait(min(began + self.period(), self.next_beat) - time.monotonic())
        finally:
            # Whatever ended the loop, no copier may outlive it: Spark reuses this process.
            self.ended = True
            self.wakeup.close()
            self.finish()

    def period(self) -> float:
        recently = time.time() * 1000 - BUSY_MS
        busy = any(r.copier.counters.last_write_ms > recently for r in self.copiers.values())
        return CONTROL_S if busy else IDLE_CONTROL_S

    def control(self, now: float) -> None:
        try:
            pipe = self.redis.pipeline(transaction=False)
            pipe.get(control.slot_epoch_key(self.engine, self.number))
            pipe.hgetall(control.slot_assignment_key(self.engine, self.number))
            epoch, assignments = pipe.execute()
        except redis.RedisError:
            return  # copiers stop writing once this has lasted CONTACT_S
        if epoch is not None and control.text(epoch) != self.epoch:
            log.info("Slot %d: epoch %s ended", self.number, self.epoch)
            self.ended = True
            return
        self.last_contact = now
        # Parsed only when it changed: a link of thousands of partitions sends a long one.
        self.read = {raw: self.read.get(raw) or json.loads(raw) for raw in assignments.values()}
        self.wanted = {
            control.text(link): self.read[raw]
            for link, raw in assignments.items()
            if self.read[raw].get("epoch") == self.epoch
        }

    def tend(self, now: float) -> None:
        """Bring the copiers in line with the assignments: hand each its link's, stop those of
        links that left (or whose spec changed), start the missing ones."""
        for link, running in list(self.copiers.items()):
            wanted = self.wanted.get(link)
            if running.copier.done or not running.thread.is_alive():
                del self.copiers[link]
                if running.copier.failure:
                    self.note_failure(link, running, now)
            elif wanted is None or _incarnation(wanted) != running.incarnation:
                running.copier.stop()
            else:
                running.copier.assign(wanted)
        for link, assignment in self.wanted.items():
            failed = self.failures.get(link)
            waiting = failed is not None and (failed.given_up or now < failed.retry_at)
            if failed is not None and waiting and failed.digest == assignment["digest"]:
                continue
            if link not in self.copiers:
                self.start(link, assignment, now)
        self.failures = {k: f for k, f in self.failures.items() if k in self.wanted}

    def start(self, link: str, assignment: Assignment, now: float) -> None:
        try:
            published = self.redis.hget(control.links_key(self.engine), link)
        except redis.RedisError:
            return
        if published is None or control.digest_of(published) != assignment["digest"]:
            return  # the link left, or its spec is changing: at a later round
        try:
            spec = control.unseal(self.key, published)
        except control.Unsealed as exc:
            self.error = str(exc)
            return
        job = batch_copier.copier_for(spec)(spec, self, self.number)
        thread = threading.Thread(target=job.run, name=f"copier-{link}", daemon=True)
        job.assign(assignment)
        thread.start()
        self.copiers[link] = Running(job, thread, _incarnation(assignment), now)

    def note_failure(self, link: str, running: Running, now: float) -> None:
        failed = self.failures.get(link)
        healthy = now - running.started > HEALTHY_AFTER_S
        digest = running.incarnation[0]
        count = 1 if failed is None or healthy or failed.digest != digest else failed.count + 1
        pause = RESTART_S[min(count, len(RESTART_S)) - 1]
        self.failures[link] = Failures(digest, count, running.copier.failure, now + pause)
        log.warning(
            "Slot %d: link %s's copier failed (%d in a row): %s",
            self.number,
            link,
            count,
            running.copier.failure,
        )

    def finish(self) -> None:
        """The epoch ended: every copier delivers what it queued and stops; then the slot says
        it writes no more."""
        for running in self.copiers.values():
            running.copier.stop()
        # Still reporting meanwhile: its key must outlive every copier that may write (a
        # slot's new epoch starts once it is gone), and the copiers stay in touch through it.
        deadline = time.monotonic() + copier.DRAIN_S + 10
        while any(r.thread.is_alive() for r in self.copiers.values()):
            if time.monotonic() > deadline:
                log.warning("Slot %d: copiers still delivering at the end", self.number)
                break
            if time.monotonic() >= self.next_beat:
                self.beat()
            time.sleep(0.05)
        self.readers.close()
        with contextlib.suppress(redis.RedisError):  # else it expires by itself
            self.redis.delete(control.slot_report_key(self.engine, self.number, self.epoch))

    # --- reporting ----------------------------------------------------------------------------

    def beat(self) -> None:
        """Report every copier; a report unchanged since the last (each copier's is rebuilt
        only when it changed, or every few seconds) only has its expiry renewed: thousands of
        partitions' reports took the slot and the engine a few percent of a core each second."""
        self.next_beat = time.monotonic() + BEAT_S
        links = {link: running.copier.report for link, running in self.copiers.items()}
        failures: dict[str, payloads.CopierFailures] = {
            link: {"count": f.count, "error": f.error, "given_up": f.given_up}
            for link, f in self.failures.items()
        }
        consumers = self.readers.count()
        # Compared by value: a copier replaces its report rather than change it, so the one
        # held here still says what was sent.
        made_of = (self.error, consumers, failures, links)
        key = control.slot_report_key(self.engine, self.number, self.epoch)
        sent = time.monotonic()
        try:
            if made_of != self.reported or not self.redis.pexpire(key, BEAT_TTL_MS):
                report: payloads.SlotReport = {
                    "epoch": self.epoch,
                    "slot": self.number,
                    "pid": os.getpid(),
                    "error": self.error,
                    "consumers": consumers,
                    "links": links,
                    "failures": failures,
                }
                self.redis.set(key, json.dumps(report), px=BEAT_TTL_MS)
                self.reported = made_of
        except redis.RedisError:
            return
        self.last_contact = max(self.last_contact, sent)
        if self.tell_engine:
            self.tell_engine = False
            control.wake(self.redis, control.engine_wake_channel(self.engine))


def _incarnation(assignment: payloads.Assignment) -> tuple[str, int]:
    return assignment["digest"], assignment.get("incarnation", 0)
