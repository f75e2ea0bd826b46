"""One link in the engine's driver: a thread that follows the link's mirror set, hands its
mirror partitions to the engine's slots (and takes them away) through Redis, grows mirror
topics whose source grew, and reports the link's heartbeat and each partition's progress
every second.

Everything that can wait on one of the link's clusters happens in this thread (or in its
source watch's), so a link whose source is down or whose credentials are wrong holds up no
other link.

This module is the thread: it follows the mirror set, plans, acknowledges and reports. What it
knows of the mirror topics on the destination, and reads there before a partition starts, is
`mirror_topics`; how its assignments reach the slots' hashes, `slot_assignments`. Its clients
come from factories (the engine's shared ones by default).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Protocol

import redis
from confluent_kafka import Producer

from . import control, mirror_topics, payloads, planning, slot_assignments, source_watch
from .copier_clients import ProducerFactory
from .failures import one_line

log = logging.getLogger("spark_jobs.link_runner")

LOOP_S = 0.2  # how often a runner with a plan to hand out or acknowledge looks again
BEAT_S = 1.0  # how often a runner reports while its link copies, or something is wrong
IDLE_BEAT_S = 5.0  # and while it is idle
RATE_WINDOW_S = 10.0
LEAVE_S = 45.0  # the longest a leaving link waits for its copiers to deliver and stop
STUCK_S = 300  # behind its source and no record written this long: its copiers start again
MAX_ERRORS = 6  # the runner's own loop failing this often in a row fails the link
PROGRESS_AGAIN_S = 60.0  # unchanged progress is sent again this often (Redis may have lost it)


class Engine(Protocol):
    """What a runner needs of the engine that runs it."""

    id: str
    redis: redis.Redis
    pid: int

    def slot_epochs(self) -> list[str]:
        """Each slot's current epoch ("" before its first)."""

    def slot_reports(self) -> list[payloads.SlotReport | None]:
        """Each slot's last report in its current epoch (None: none yet)."""

    def slot_troubles(self) -> dict[int, str]:
        """Why each slot that is not running now is restarting."""

    def slots_settled(self) -> bool:
        """Whether every slot's job of its current epoch runs: no task of an older epoch
        can write."""

    def slot_loads(self, besides: str) -> list[int]:
        """How many partitions each slot holds for links other than `besides`."""

    def destination(self, config: dict[str, str]) -> mirror_topics.Destination:
        """The admin client and translation reader the links into one cluster share."""

    def source_watch(self, config: dict[str, str]) -> source_watch.SourceWatch:
        """The watch (and its admin client) the links reading one cluster with the same
        settings share."""


class LinkRunner:
    def __init__(
        self,
        engine: Engine,
        spec: payloads.LinkSpec,
        digest: str,
        *,
        destination: Callable[[dict[str, str]], mirror_topics.Destination] | None = None,
        watch: Callable[[dict[str, str]], source_watch.SourceWatch] | None = None,
        producer: ProducerFactory = Producer,
    ):
        self.engine = engine
        self.spec, self.digest = spec, digest
        self.link_id, self.name = spec["link_id"], spec["link_name"]
        # Its mirror set or its source changed, a slot started, or the end.
        self.woken = threading.Event()
        self.watch = (watch or engine.source_watch)(spec["source"]).join(self.woken)
        # What is wrong, by where it went wrong; each is shown until that step succeeds.
        self.trouble: dict[str, str] = {}
        self.topics = mirror_topics.MirrorTopics(
            self.name,
            spec["destination"],
            (destination or engine.destination)(spec["destination"]),
            self.watch,
            self.trouble,
            producer,
        )
        self.thread = threading.Thread(target=self.run, name=f"link-{self.name}", daemon=True)
        self.published: control.Raw | None = None  # its mirror set as the engine last read it
        self.stopping = False
        self.started_ms = int(time.time() * 1000)
        # The mirror set (mirror -> source topic) and its generation, as published.
        self.mirrors: dict[str, str] = {}
        self.flows: dict[str, payloads.FlowSpec] = {}  # by merge flow id
        self.generation = 0
        self.sets: dict[int, list[str]] = {}  # generation -> its mirrors, until acknowledged
        self.acked = 0  # the generation no copier writes outside of any more
        # What the slots hold of this link.
        slots = len(engine.slot_epochs())
        self.epochs = [""] * slots  # the slot epoch each slot's holdings were planned for
        self.assigned: planning.Holdings = [{} for _ in range(slots)]
        self.home: dict[planning.Ident, int] = {}  # each partition's slot, for good
        self.version = 0
        self.incarnation = 0  # raised to start the link's copiers again
        self.restarted = time.time()  # when its copiers last (re)started
        self.pending: list[tuple[int, int]] = []  # (generation, version) to acknowledge
        self.handout = slot_assignments.Handout(engine.id, self.link_id, self.name, self.trouble)
        self.planned: tuple[int, dict[str, int]] | None = None
        # Reporting.
        self.counted: planning.Counted = {}
        self.totals = [0, 0]  # records and bytes
        self.window: deque[tuple[float, int, int]] = deque()
        self.failed = ""  # why the link cannot run: the console fails it
        self.next_beat = 0.0
        self.flowed: dict[str, tuple[int, int]] = {}  # each flow's copied and skipped, last beat
        self.progress = planning.ProgressOf()
        # The progress last sent, and when.
        self.progress_sent: tuple[payloads.MirrorProgress | None, float] = (None, 0.0)

    # --- the thread -------------------------------------------------------------------------

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.stopping = True
        self.woken.set()

    def offer(self, published: control.Raw | None) -> None:
        """The link's mirror set as the engine read it (all links' in one request)."""
        if published is not None and published != self.published:
            self.published = published
            self.woken.set()

    def beat_soon(self) -> None:
        """Report (and grow mirror topics, and the rest of a beat's work) at once."""
        self.next_beat = 0.0
        self.woken.set()

    @property
    def alive(self) -> bool:
        return self.thread.is_alive()

    def run(self) -> None:
        log.info("Link %s: joined the engine", self.name)
        self.publish_heartbeat("starting")
        self.next_beat = 0.0  # "running" as soon as its partitions are handed out
        errors = 0
        while not self.stopping:
            try:
                self.step()
                if errors:
                    errors = 0
                    self.trouble.pop("runner", None)
            except Exception as exc:  # the link's own trouble: shown, then tried again
                errors += 1
                self.trouble["runner"] = one_line(exc)
                log.exception("Link %s: the runner's loop failed", self.name)
                if errors >= MAX_ERRORS:
                    self.failed = f"the engine could not run the link: {self.trouble['runner']}"
                self.publish_heartbeat("failed" if self.failed else "running")
                time.sleep(min(2**errors, 15))
            # A plan that could not be prepared (the source down) is tried again at the next
            # beat, not every loop; partitions whose new leader is being elected, every loop.
            busy = (
                self.pending
                or self.topics.electing
                or (self.planned is None and "start" not in self.trouble)
            )
            self.woken.wait(LOOP_S if busy else max(0.0, self.next_beat - time.monotonic()))
            self.woken.clear()
        try:
            self.leave()
        finally:
            self.watch.leave()
            log.info("Link %s: left the engine", self.name)

    def step(self) -> None:
        if self.watch.changed.is_set():  # a source that grew, or lag: report at once
            self.watch.changed.clear()
            self.next_beat = 0.0
        self.follow()
        self.take_back_restarted_slots()
        self.plan()
        if self.pending:  # a plan waits to be acknowledged: say so as soon as it is
            acked = self.acked
            self.take_up_acknowledgements(self.link_reports())
            if self.acked != acked:
                self.next_beat = 0.0
        if time.monotonic() >= self.next_beat:
            self.topics.grow(self.mirrors)
            reports = self.link_reports()
            self.take_up_acknowledgements(reports)
            self.tell_watch()
            self.restart_if_stuck(reports)
            # The assignments again at each beat (Redis may have lost them), in its request.
            self.publish_heartbeat("failed" if self.failed else "running", reports, True)

    def follow(self) -> None:
        """Take up the published mirror set (Redis losing it changes nothing)."""
        if self.published is None:
            return
        published: payloads.MirrorSet = json.loads(self.published)
        mirrors = {m: v["source_topic"] for m, v in published.get("mirrors", {}).items()}
        flows = published.get("flows", {})
        changed = (mirrors, flows) != (self.mirrors, self.flows)
        if published.get("generation", 0) != self.generation or changed:
            self.mirrors, self.flows = mirrors, flows
            self.generation = published.get("generation", 0)
            self.sets[self.generation] = sorted(mirrors)
            self.topics.forget(set(self.topics.partitions) - set(mirrors))
            self.tell_watch()

    def take_back_restarted_slots(self) -> None:
        """A slot in a new epoch holds nothing of the link: its partitions are handed to it
        again (their homes stay, so they go back to it and nowhere else)."""
        for slot, epoch in enumerate(self.engine.slot_epochs()):
            if epoch != self.epochs[slot]:
                self.epochs[slot] = epoch
                self.assigned[slot] = {}
                self.planned = None

    # --- handing out partitions ------------------------------------------------------------

    def plan(self) -> None:
        """Hand the slots the link's partitions anew when the mirror set or a topic's
        partitions changed: a new plan version for the slots to apply and acknowledge."""
        topics = self.topics
        if (self.generation, topics.partitions) == self.planned:
            return
        topics.learn(self.mirrors)
        wanted = planning.wanted_partitions(self.mirrors, topics.topic_ids, topics.partitions)
        wanted |= {i for flow in self.flows.values() for i in planning.flow_idents(flow)}
        added, ready = self.entries_for(planning.not_held(self.assigned, wanted))
        self.assigned, self.home = planning.assign(
            self.assigned, self.home, wanted, added, self.engine.slot_loads(self.link_id)
        )
        if ready:
            self.planned = (self.generation, dict(topics.partitions))
        # Each plan is a version the slots acknowledge, even when it moves nothing: that is
        # how the generation it serves gets acknowledged.
        self.version += 1
        self.pending.append((self.generation, self.version))
        self.publish_assignments()

    def entries_for(
        self, idents: list[planning.Ident]
    ) -> tuple[dict[planning.Ident, planning.Entry], bool]:
        """What a copier needs to start copying each partition or flow part; False when they
        cannot be read yet (then no partition starts, and the next loop tries again)."""
        flows: dict[planning.Ident, planning.Entry] = {
            i: {"flow": {**self.flows[i[1]], "part": i[2]}} for i in idents if planning.is_flow(i)
        }
        idents = [i for i in idents if not planning.is_flow(i)]
        if not idents:
            return flows, True
        entries, ready = self.topics.entries_for(idents, self.mirrors)
        return flows | entries, ready  # the flows start meanwhile

    def publish_assignments(self) -> None:
        """Hand each started slot its partitions; the slots wake when they changed."""
        pipe = self.engine.redis.pipeline(transaction=False)
        self.handout.send(pipe, self.queue_assignments(pipe))

    def queue_assignments(self, pipe: redis.client.Pipeline) -> dict[int, str]:
        """Add each started slot's partitions to `pipe` (`Handout.queue`)."""
        plan = (self.version, self.digest, self.incarnation)
        return self.handout.queue(pipe, self.assigned, self.epochs, plan)

    def restart_if_stuck(self, reports: list[payloads.CopierReport | None]) -> None:
        """Behind its source with nothing written for STUCK_S: the link's copiers start
        again (their partitions resume from the destination)."""
        _, behind, last_write, _ = self.progress(reports, self.watch.high_watermarks, self.mirrors)
        since = max(last_write / 1000, self.restarted)
        if behind and time.time() - since > STUCK_S:
            self.trouble["stuck"] = (
                f"copied nothing for {STUCK_S} s although the source has new records; "
                "its copiers were started again"
            )
            log.warning("Link %s: %s", self.name, self.trouble["stuck"])
            self.incarnation += 1
            self.restarted = time.time()
        elif last_write / 1000 > self.restarted:
            self.trouble.pop("stuck", None)

    # --- leaving ------------------------------------------------------------------------------

    def leave(self) -> None:
        """The link left the engine: its copiers deliver what they queued and stop; then the
        heartbeat says it writes nothing."""
        self.handout.take_back(self.engine.redis, len(self.assigned))
        deadline = time.monotonic() + LEAVE_S
        while any(self.link_reports()) and time.monotonic() < deadline:
            self.publish_heartbeat("stopping")
            time.sleep(LOOP_S)
        self.acked, self.sets = self.generation, {self.generation: []}
        self.mirrors = {}
        self.publish_heartbeat("stopped")

    # --- reporting ----------------------------------------------------------------------------

    def link_reports(self) -> list[payloads.CopierReport | None]:
        """What each slot last reported of this link's copier (None: it has none)."""
        return [
            report["links"].get(self.link_id) if report else None
            for report in self.engine.slot_reports()
        ]

    def slot_failures(self) -> list[payloads.CopierFailures]:
        return [
            failure
            for report in self.engine.slot_reports()
            if report and (failure := report["failures"].get(self.link_id))
        ]

    def take_up_acknowledgements(self, reports: list[payloads.CopierReport | None]) -> None:
        """Note the generation every slot has taken up, and forget older mirror sets. While a
        slot restarts, a task of its older epoch may still write: nothing is acknowledged."""
        if self.engine.slots_settled():
            self.acked, self.pending = planning.acknowledged(
                self.pending, reports, self.version, self.acked
            )
        for generation in [g for g in self.sets if g < self.acked]:
            del self.sets[generation]

    def tell_watch(self) -> None:
        """Which source partitions to read: those of the mirror set."""
        self.watch.watch(
            sorted(set(self.mirrors.values())),
            [
                (self.mirrors[m], p)
                for m in self.mirrors
                for p in range(self.topics.partitions.get(m, 0))
            ],
        )

    def count(self, reports: list[payloads.CopierReport | None]) -> bool:
        """Add what the copiers wrote since the last beat to the link's totals; whether any
        copier wrote."""
        self.counted, records, size = planning.written_since(self.counted, reports)
        self.totals[0] += records
        self.totals[1] += size
        return bool(records or size)

    def errors(self, copier_errors: list[str]) -> str:
        """Everything wrong with the link now, the source first: it explains the rest."""
        found = [self.watch.problem(), self.failed, *self.trouble.values(), *copier_errors]
        held = {slot for slot, partitions in enumerate(self.assigned) if partitions}
        held |= set(self.home.values())
        for slot, why in self.engine.slot_troubles().items():
            if slot in held:
                found.append(f"copier slot {slot} is restarting: {why}")
        for failure in self.slot_failures():
            found.append(f"a copier failed {failure['count']} time(s): {failure['error']}")
        return "; ".join(dict.fromkeys(e for e in found if e))

    def publish_heartbeat(
        self,
        state: str,
        reports: Sequence[payloads.CopierReport | None] = (),
        assignments: bool = False,
    ) -> None:
        """Publish the link's heartbeat and each mirror partition's progress (and the slots'
        assignments with them)."""
        now = time.time()
        reports = list(reports)
        progress, behind, last_write, copier_errors = self.progress(
            reports, self.watch.high_watermarks, self.mirrors
        )
        moved = self.count(reports)
        self.window.append((now, self.totals[0], self.totals[1]))
        while now - self.window[0][0] > RATE_WINDOW_S:
            self.window.popleft()
        if any(f["given_up"] for f in self.slot_failures()):
            self.failed = self.failed or "its copier kept failing"
            state = "failed"
        error = self.errors(copier_errors)
        flows = planning.flow_progress(reports)
        # A merge flow that copied since the last beat keeps the beat quick too (its
        # checkpoints and lag are read from it).
        flowed = {i: (f["records"], f["skipped"]) for i, f in flows.items()}
        moved = moved or flowed != self.flowed
        self.flowed = flowed
        if moved:  # the source changed: its ends are read at once, not at the next quiet round
            self.watch.ask()
        busy = moved or behind or error or self.pending or state != "running"
        self.next_beat = time.monotonic() + (BEAT_S if busy else IDLE_BEAT_S)
        heartbeat: payloads.LinkHeartbeat = {
            "at_ms": int(now * 1000),
            "started_ms": self.started_ms,
            "pid": self.engine.pid,
            "state": state,
            "error": error,
            "mirrors": self.sets.get(self.acked, sorted(self.mirrors)),
            "generation": self.acked,
            "epochs": self.epochs,
            "records": self.totals[0],
            "bytes": self.totals[1],
            "records_per_sec": planning.rate(list(self.window), 1),
            "bytes_per_sec": planning.rate(list(self.window), 2),
            "fetched_at_ms": self.watch.fetched_at_ms,
            "last_write_ms": last_write,
            "behind": behind,
            "flows": flows,
            "schema_waits": planning.schema_waits(progress),
        }
        pipe = self.engine.redis.pipeline()  # heartbeat and progress together
        handing = self.queue_assignments(pipe) if assignments else None
        sent, sent_at = self.progress_sent
        resend = progress is not sent or now - sent_at > PROGRESS_AGAIN_S
        if resend:
            pipe.set(control.progress_key(self.link_id), json.dumps(progress))
        pipe.set(control.heartbeat_key(self.link_id), json.dumps(heartbeat))
        if self.handout.send(pipe, handing) and resend:
            self.progress_sent = (progress, now)

    def holdings(self) -> list[int]:
        return [len(held) for held in self.assigned]
