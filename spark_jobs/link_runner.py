"""One link in the engine's driver: a thread that follows the link's mirror set, hands its
mirror partitions to the engine's slots (and takes them away) through Redis, grows mirror
topics whose source grew, and reports the link's heartbeat and each partition's progress
every second.

Everything that can wait on one of the link's clusters happens in this thread (or in its
source watch's), so a link whose source is down or whose credentials are wrong holds up no
other link.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from collections import deque
from collections.abc import Sequence
from typing import Protocol

import redis

from infra.kafka_admin import KafkaAdmin, KafkaAdminError

from . import control, payloads, planning, source_watch, translation

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

    def destination(self, config: dict[str, str]) -> Destination:
        """The admin client and translation reader the links into one cluster share."""

    def source_watch(self, config: dict[str, str]) -> source_watch.SourceWatch:
        """The watch (and its admin client) the links reading one cluster with the same
        settings share."""


class Destination:
    """A destination cluster's clients, shared by the links into it."""

    def __init__(self, config: dict[str, str]):
        self.admin = KafkaAdmin(config, timeout=15)
        self.reader = translation.Reader(config)
        self.lock = threading.Lock()  # the reader serves one runner at a time

    def runs(self, topic_ids: set[str]) -> dict[tuple[str, int], translation.Runs]:
        with self.lock:
            return self.reader.runs(topic_ids)

    def close(self) -> None:
        self.reader.close()


class LinkRunner:
    def __init__(self, engine: Engine, spec: payloads.LinkSpec, digest: str):
        self.engine = engine
        self.spec, self.digest = spec, digest
        self.link_id, self.name = spec["link_id"], spec["link_name"]
        # Its mirror set or its source changed, a slot started, or the end.
        self.woken = threading.Event()
        self.watch = engine.source_watch(spec["source"]).join(self.woken)
        self.destination = engine.destination(spec["destination"])
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
        self.partitions: dict[str, int] = {}  # mirror -> partitions
        self.topic_ids: dict[str, str] = {}  # mirror -> its id on the destination
        # What the slots hold of this link.
        slots = len(engine.slot_epochs())
        self.epochs = [""] * slots  # the slot epoch each slot's holdings were planned for
        self.assigned: planning.Holdings = [{} for _ in range(slots)]
        self.home: dict[planning.Ident, int] = {}  # each partition's slot, for good
        self.version = 0
        self.incarnation = 0  # raised to start the link's copiers again
        self.restarted = time.time()  # when its copiers last (re)started
        self.pending: list[tuple[int, int]] = []  # (generation, version) to acknowledge
        self.handed_out: dict[int, str] = {}  # the assignments last published, by slot
        # Each slot's assignment as last encoded: what it was made of, and the text (`encoded`).
        self.encodings: dict[
            int, tuple[tuple[str, int, str, int], dict[planning.Ident, planning.Entry], str]
        ] = {}
        self.planned: tuple[int, dict[str, int]] | None = None
        # Reporting.
        self.counted: planning.Counted = {}
        self.totals = [0, 0]  # records and bytes
        self.window: deque[tuple[float, int, int]] = deque()
        # What is wrong, by where it went wrong; each is shown until that step succeeds.
        self.trouble: dict[str, str] = {}
        self.electing = False  # partitions wait for their new leader: plan again soon
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
                or self.electing
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
            self.grow_mirror_topics()
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
            for gone in set(self.partitions) - set(mirrors):
                self.partitions.pop(gone, None)
                self.topic_ids.pop(gone, None)
                self.trouble.pop(f"mirror {gone}", None)
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
        if (self.generation, self.partitions) == self.planned:
            return
        self.learn_mirror_topics()
        wanted = planning.wanted_partitions(self.mirrors, self.topic_ids, self.partitions)
        wanted |= {i for flow in self.flows.values() for i in planning.flow_idents(flow)}
        added, ready = self.entries_for(planning.not_held(self.assigned, wanted))
        self.assigned, self.home = planning.assign(
            self.assigned, self.home, wanted, added, self.engine.slot_loads(self.link_id)
        )
        if ready:
            self.planned = (self.generation, dict(self.partitions))
        # Each plan is a version the slots acknowledge, even when it moves nothing: that is
        # how the generation it serves gets acknowledged.
        self.version += 1
        self.pending.append((self.generation, self.version))
        self.publish_assignments()

    def entries_for(
        self, idents: list[planning.Ident]
    ) -> tuple[dict[planning.Ident, planning.Entry], bool]:
        """What a copier needs to start copying each partition (its source topic and stored
        offset runs); False when they cannot be read yet (then none starts, and the next loop
        tries again)."""
        flows: dict[planning.Ident, planning.Entry] = {
            i: {"flow": {**self.flows[i[1]], "part": i[2]}} for i in idents if planning.is_flow(i)
        }
        idents = [i for i in idents if not planning.is_flow(i)]
        if not idents:
            return flows, True
        began = time.monotonic()
        try:
            runs, waiting = self.runs_for(idents)
        except (KafkaAdminError, translation.StoreFailed, RuntimeError) as exc:
            # The source or the destination down, say.
            self.trouble["start"] = f"cannot start {len(idents)} partition(s) yet: {exc}"
            log.warning("Link %s: %s", self.name, self.trouble["start"])
            return flows, False  # the flows start meanwhile
        self.electing = bool(waiting)
        if waiting:
            # New partitions whose leader is not elected yet: the others start now, these at
            # the next loop.
            (mirror, partition), why = min(waiting.items())
            self.trouble["start"] = (
                f"{len(waiting)} partition(s) cannot start yet ({mirror}[{partition}]: {why})"
            )
        else:
            self.trouble.pop("start", None)
        idents = [i for i in idents if (i[0], i[2]) not in waiting]
        if idents:
            log.info(
                "Link %s: handing out %d partition(s) of %d topic(s) (prepared in %.2f s)",
                self.name,
                len(idents),
                len({m for m, _, _ in idents}),
                time.monotonic() - began,
            )
        return flows | {
            (mirror, topic_id, p): {
                "mirror": mirror,
                "source": self.mirrors[mirror],
                "topic_id": topic_id,
                "partition": p,
                "runs": [[e.source, e.destination] for e in runs[mirror, topic_id, p].entries],
            }
            for mirror, topic_id, p in idents
        }, not waiting

    def learn_mirror_topics(self) -> None:
        """Note the id and partitions of each mirror topic new to the set, from the
        destination, in one request; one it does not show is tried again at the next plan."""
        new = [m for m in self.mirrors if m not in self.topic_ids]
        if not new:
            return
        try:
            found = self.destination.admin.describe_topics(new)
        except KafkaAdminError as exc:  # copied once it is back
            found, why = {}, str(exc)
        else:
            why = "not on the destination (yet)"
        for mirror in new:
            info = found.get(mirror)
            if info is None:
                self.trouble[f"mirror {mirror}"] = f"mirror topic {mirror}: {why}"
                continue
            self.trouble.pop(f"mirror {mirror}", None)
            # A new mirror has its source's partitions, so its copy starts without waiting
            # for the source; partitions the source gains are added by `grow_mirror_topics`.
            self.topic_ids[mirror] = info.topic_id
            self.partitions[mirror] = max(self.partitions.get(mirror, 0), info.partitions)

    def runs_for(
        self, idents: list[planning.Ident]
    ) -> tuple[dict[planning.Ident, translation.Runs], dict[tuple[str, int], str]]:
        """The stored offset runs of partitions about to start, and why each (mirror,
        partition) whose mirror partition has no leader yet cannot start now. A partition with
        nothing copied yet whose source starts above offset 0 gets its first entry now, so its
        lag and translation are right before its first record."""
        stored = self.destination.runs({i[1] for i in idents})
        ends, waiting = self.destination.admin.readable_offsets([(m, p) for m, _, p in idents])
        idents = [i for i in idents if (i[0], i[2]) in ends]
        runs, pins = {}, []
        fresh = [i for i in idents if ends[i[0], i[2]] == 0 and not stored.get((i[1], i[2]))]
        if fresh and (problem := self.watch.problem()):  # asking would hold the loop
            raise KafkaAdminError(f"the source cluster does not answer: {problem}")
        starts = self.watch.admin.offsets([(self.mirrors[m], p) for m, _, p in fresh], "earliest")
        for mirror, topic_id, p in idents:
            found = stored.get((topic_id, p), translation.Runs())
            start = starts.get((self.mirrors[mirror], p), 0)
            if start > 0:
                found.add(translation.Entry(start, 0))
                pins.append((topic_id, p, translation.Entry(start, 0)))
            runs[mirror, topic_id, p] = found
        translation.store(self.spec["destination"], pins)
        return runs, waiting

    def publish_assignments(self) -> None:
        """Hand each started slot its partitions; the slots wake when they changed."""
        pipe = self.engine.redis.pipeline(transaction=False)
        self.send(pipe, self.queue_assignments(pipe))

    def queue_assignments(self, pipe: redis.client.Pipeline) -> dict[int, str]:
        """Add each started slot's partitions to `pipe`, and a wake when they changed; what
        is handed out once it is sent."""
        assignments = {
            slot: self.encoded(slot, held)
            for slot, held in enumerate(self.assigned)
            if self.epochs[slot]  # else the slot has not started yet
        }
        for slot, assignment in assignments.items():
            pipe.hset(control.slot_assignment_key(self.engine.id, slot), self.link_id, assignment)
        if assignments != self.handed_out:
            pipe.publish(control.slots_wake_channel(self.engine.id), b"")
        return assignments

    def encoded(self, slot: int, held: dict[planning.Ident, planning.Entry]) -> str:
        """A slot's assignment as sent, encoded again only when it changed (at 5,000
        partitions a slot, encoding both each beat was most of an idle driver's work). `held`
        is replaced, or the plan's version raised, whenever it changes."""
        basis = (self.epochs[slot], self.version, self.digest, self.incarnation)
        last = self.encodings.get(slot)
        if last is None or last[0] != basis or last[1] is not held:
            assignment: payloads.Assignment = {
                "epoch": basis[0],
                "version": basis[1],
                "digest": basis[2],
                "incarnation": basis[3],
                "partitions": list(held.values()),
            }
            last = self.encodings[slot] = (basis, held, json.dumps(assignment))
        return last[2]

    def send(self, pipe: redis.client.Pipeline, handing: dict[int, str] | None) -> bool:
        """Send what `pipe` holds; `handing`: the assignments in it. Whether it was sent."""
        try:
            pipe.execute()
        except redis.RedisError as exc:
            log.warning("Link %s: cannot report to Redis: %s", self.name, exc)
            if handing is not None:
                self.trouble["redis"] = f"Redis does not answer: {exc}"
            return False
        if handing is not None:
            self.trouble.pop("redis", None)
            self.handed_out = handing
        return True

    def grow_mirror_topics(self) -> None:
        """Give each mirror topic the partitions its source has gained, before copying them."""
        # The source down: grown when it is back.
        grown = planning.grown(self.mirrors, self.watch.counts, self.partitions)
        if not grown:
            return
        try:
            mirrored = self.destination.admin.partition_counts(list(grown))
        except KafkaAdminError as exc:  # grown at a later loop
            self.trouble["growth"] = f"cannot read the mirror topics' partitions: {exc}"
            return
        problems = []
        for mirror, wanted in grown.items():
            if wanted > mirrored[mirror]:
                try:
                    self.destination.admin.create_partitions(mirror, wanted)
                except KafkaAdminError as exc:
                    problems.append(f"cannot grow mirror topic {mirror} to {wanted}: {exc}")
                    continue
                log.info(
                    "Link %s: grew mirror topic %s from %d to %d partitions, as its source",
                    self.name,
                    mirror,
                    mirrored[mirror],
                    wanted,
                )
            self.partitions[mirror] = max(wanted, mirrored[mirror])
        if problems:
            self.trouble["growth"] = "; ".join(problems)
        else:
            self.trouble.pop("growth", None)

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
        try:
            pipe = self.engine.redis.pipeline(transaction=False)
            for slot in range(len(self.assigned)):
                pipe.hdel(control.slot_assignment_key(self.engine.id, slot), self.link_id)
            pipe.publish(control.slots_wake_channel(self.engine.id), b"")
            pipe.execute()
        except redis.RedisError:
            log.warning(
                "Link %s: cannot take its partitions back: Redis does not answer", self.name
            )
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
            [(self.mirrors[m], p) for m in self.mirrors for p in range(self.partitions.get(m, 0))],
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
        if self.send(pipe, handing) and resend:
            self.progress_sent = (progress, now)

    def holdings(self) -> list[int]:
        return [len(held) for held in self.assigned]


_JAVA_ERROR = re.compile(r"^: (?:[a-z]\w*\.)+[A-Z]\w*: (?:\[\w+\] )?(.*)$")


def one_line(error: BaseException) -> str:
    """A failure in one line: the Python error of a task, else the Java exception's own
    message, not the JVM's trace."""
    text = str(error)
    if "Python worker exited unexpectedly" in text:
        return "a copier slot's Python worker died (killed, or out of memory)"
    lines = text.splitlines()
    python = (
        "RuntimeError:",
        "KafkaException:",
        "Exception:",
        "ModuleNotFoundError:",
        "ImportError:",
    )
    for line in lines:
        if line.startswith(python):
            return line
    for i, line in enumerate(lines):
        if java := _JAVA_ERROR.match(line):  # Py4J: ": org.apache.X: [CLASS] message", then more
            more = [m.strip() for m in lines[i + 1 : i + 3] if m.strip() and not m.startswith("\t")]
            return re.sub(r"\s*SQLSTATE: \w+", "", " ".join([java[1], *more]))
    return f"{type(error).__name__}: {lines[0]}" if lines else type(error).__name__
