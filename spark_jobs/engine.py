"""The mirror engine: one long-running Spark application that copies the mirror topics of every
link of the console, partition for partition and offset for offset. The console launches it
once and keeps it:

    ISTHMUS_ENGINE_SPEC='{...}' spark-submit --master local[*] spark_jobs/engine.py

It runs a few *slots* (see `slot`; by default one per core Spark gives it), each a Spark job of
one long-running task that copies partitions of any link. It follows the links the console
publishes in Redis: each link gets a runner thread (`link_runner`) that hands its partitions to
the slots and reports the link's progress; links come and go without a restart and without a
pause of the others.

Each slot's Spark job is an *epoch* of that slot. A slot's new epoch starts only once every task
of its previous one is known to have stopped, so no mirror partition ever has two writers; a
slot that fails is started again after a pause, while the other slots go on copying.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from functools import partial
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

import redis

if __package__ in (None, ""):  # run as a file by spark-submit: import the project's packages
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from infra.kafka_admin import KafkaAdmin
from spark_jobs import control, copier, payloads, planning, shared_clients, slot, source_watch
from spark_jobs.failures import one_line
from spark_jobs.link_runner import LinkRunner
from spark_jobs.mirror_topics import Destination

if TYPE_CHECKING:
    from pyspark import SparkContext

log = logging.getLogger("spark_jobs.engine")  # not __name__: run as __main__

LOOP_S = 0.2  # the loop's period while a slot starts, or the engine stops
IDLE_LOOP_S = 1.0  # else: a change the loop must act on wakes it (see control.Wakeup)
BEAT_S = 1.0
SPARE_BEAT_TTL_S = 5  # a spare's beat outlives it by this
# A slot's new epoch starts writing no sooner than this after it was claimed: a task of the
# old one that lost the control channel has stopped writing by then (CONTACT_S, plus margin).
CLAIM_WAIT_S = copier.CONTACT_S + 1.5
RELAUNCH_S = [1, 2, 4, 8, 15]  # pauses before relaunching a slot whose job failed
HEALTHY_AFTER_S = 60  # a slot's job running this long forgives its earlier failures
RATE_WINDOW_S = 10.0


class SlotJob:
    """The engine's side of a slot: its epoch and the Spark job that runs it."""

    def __init__(self, number: int):
        self.number = number
        self.epoch = ""
        self.claimed_at: float | None = None  # None: no epoch claimed for the next job yet
        self.job: threading.Thread | None = None
        self.job_error: BaseException | None = None
        self.job_started = 0.0
        self.launched = False  # a job of this slot has run in this engine
        self.failures = 0
        self.retry_at = 0.0
        self.error = ""
        self.window: deque[tuple[float, int, int]] = deque()

    @property
    def running(self) -> bool:
        return self.job is not None and self.job.is_alive()

    def trouble(self) -> str:
        """Why the slot does not run now: its job's end, as soon as it ended."""
        if self.job is not None:
            return one_line(self.job_error) if self.job_error else "its Spark task ended"
        return self.error or "starting"


class Engine:
    def __init__(self, spec: payloads.EngineSpec):
        self.spec = spec
        self.id, self.key = spec["engine"], spec["key"]
        self.pid = os.getpid()
        self.redis = control.client(spec["redis_url"], 2, spec.get("redis_sentinels"))
        self.sc: SparkContext | None = None  # once the engine runs
        self.slots: list[SlotJob] = []
        self.reports: list[payloads.SlotReport | None] = []
        # As last read: unchanged ones are not parsed.
        self.raw_reports: list[control.Raw | None] = []
        self.runners: dict[str, LinkRunner] = {}
        # Clients shared by the links that reach one cluster with the same settings.
        self.destinations = shared_clients.Shared(Destination)
        self.sources = shared_clients.Shared(_source_watch)
        self.wakeup = control.Wakeup(self.redis, control.engine_wake_channel(self.id))
        self.stopping = False
        self.started_ms = int(time.time() * 1000)
        self.error = ""
        self.next_beat = 0.0
        self.spare = spec.get("spare", "")  # its token, until adopted

    # --- what runners ask -------------------------------------------------------------------

    def slot_epochs(self) -> list[str]:
        return [s.epoch if s.running else "" for s in self.slots]

    def slot_reports(self) -> list[payloads.SlotReport | None]:
        return list(self.reports)

    def slot_troubles(self) -> dict[int, str]:
        """Why each slot that is not running now is restarting."""
        return {s.number: s.trouble() for s in self.slots if not s.running}

    def slots_settled(self) -> bool:
        return all(s.running for s in self.slots)

    def slot_loads(self, besides: str) -> list[int]:
        loads = [0] * len(self.slots)
        for link, runner in list(self.runners.items()):
            if link != besides:
                loads = [a + b for a, b in zip(loads, runner.holdings(), strict=True)]
        return loads

    def destination(self, config: dict[str, str]) -> Destination:
        return self.destinations.get(config)

    def source_watch(self, config: dict[str, str]) -> source_watch.SourceWatch:
        return self.sources.get(config)

    # --- the loop ---------------------------------------------------------------------------

    def run(self) -> int:
        if self.spare:
            self.sc = self.wait_as_spare()
            if self.spare:  # stopped before it was adopted: it never was the engine
                self.wakeup.close()
                return 0
        self.publish_heartbeat("starting")
        # The slots' epochs are claimed before Spark starts, so the wait for tasks of an
        # earlier engine runs meanwhile; a guess of their number, set right below.
        self.set_slots(int(self.spec.get("tasks") or os.cpu_count() or 1))
        self.sc = self.sc or self.beating_while_starting(spark_context)
        cores = self.sc.defaultParallelism
        count = max(1, int(self.spec.get("tasks") or cores))
        if (self.sc.master or "").startswith("local") and count > cores:
            # Slots beyond the cores would wait forever for one, their partitions uncopied.
            log.warning("%d slots asked, %d cores: running %d", count, cores, cores)
            count = cores
        self.set_slots(count)
        log.info("The engine runs %d copier slot(s)", count)
        while not self.stopping:
            now = time.monotonic()
            self.follow_links()
            self.offer_mirror_sets()
            for s in self.slots:
                self.tend(s, now)
            self.read_reports()  # each loop: a promote waits on what they acknowledge
            if now >= self.next_beat:
                self.keep_epochs()
                self.publish_heartbeat("running")
            self.wakeup.wait(LOOP_S if self.stopping or not self.slots_settled() else IDLE_LOOP_S)
        self.wakeup.close()
        self.shut_down()
        self.publish_heartbeat("stopped")
        return 0

    def wait_as_spare(self) -> SparkContext:
        """A spare engine (replication/engine/spare.py): Spark started and its Python workers
        warm, it claims no slot and writes nothing, beating under its own key, until the
        supervisor of its host adopts it (the engine's takeover due); then it is the engine."""
        sc = spark_context()
        workers = int(self.spec.get("tasks") or sc.defaultParallelism)
        sc.parallelize(range(workers), workers).foreach(_warm)
        host = self.spec.get("host", "")
        beat_key = control.spare_key(self.id, host)
        adopted_key = control.spare_adopted_key(self.id, host)
        log.info("A spare engine on host %s: ready, waiting to be adopted", host)
        while not self.stopping:
            try:
                if control.text(self.redis.get(adopted_key) or b"") == self.spare:
                    self.redis.delete(beat_key, adopted_key)
                    log.info("Adopted on host %s: this spare runs the engine now", host)
                    self.spare, self.started_ms = "", int(time.time() * 1000)
                    break
                beat: payloads.SpareBeat = {
                    "at_ms": int(time.time() * 1000),
                    "pid": self.pid,
                    "host": host,
                }
                self.redis.set(beat_key, json.dumps(beat), ex=SPARE_BEAT_TTL_S)
            except redis.RedisError as exc:
                log.warning("A spare engine cannot reach Redis: %s", exc)
            self.wakeup.wait(BEAT_S)  # its supervisor wakes it when it adopts it
        return sc

    def beating_while_starting(self, start: Callable[[], SparkContext]) -> SparkContext:
        """`start()` (Spark starting: seconds, more on a busy machine) while a thread beats, so
        another host's supervisor does not take a starting engine for a dead one."""
        started = threading.Event()

        def beat() -> None:
            while not started.wait(BEAT_S):
                self.publish_heartbeat("starting")

        beating = threading.Thread(target=beat, name="starting-beat", daemon=True)
        beating.start()
        try:
            return start()
        finally:
            started.set()
            beating.join()

    def follow_links(self) -> None:
        """Start a runner for each link published, stop those of links gone (or whose spec
        changed: its new runner starts once the old one has left)."""
        try:
            published = self.redis.hgetall(control.links_key(self.id))
        except redis.RedisError as exc:
            self.error = f"Redis does not answer: {exc}"
            return
        wanted = {control.text(link): raw for link, raw in published.items()}
        for link, runner in list(self.runners.items()):
            if not runner.alive:
                del self.runners[link]
            elif link not in wanted or control.digest_of(wanted[link]) != runner.digest:
                runner.stop()
        for link, raw in wanted.items():
            if link in self.runners:
                continue
            try:
                spec = control.unseal(self.key, raw)
            except control.Unsealed as exc:
                self.error = str(exc)
                continue
            runner = LinkRunner(self, spec, control.digest_of(raw))
            self.runners[link] = runner
            runner.start()

    def offer_mirror_sets(self) -> None:
        """Every link's published mirror set, in one request; a runner whose set changed
        wakes."""
        runners = list(self.runners.values())
        if not runners:
            return
        try:
            published = self.redis.mget([control.mirrors_key(r.link_id) for r in runners])
        except redis.RedisError as exc:
            self.error = f"Redis does not answer: {exc}"
            return
        for runner, raw in zip(runners, published, strict=True):
            runner.offer(raw)

    # --- slots and their epochs -------------------------------------------------------------

    def set_slots(self, count: int) -> None:
        self.slots = self.slots[:count] + [SlotJob(n) for n in range(len(self.slots), count)]
        self.reports = (self.reports + [None] * count)[:count]
        for s in self.slots:
            if not s.epoch:
                self.claim(s)

    def claim(self, s: SlotJob) -> None:
        """Start a new epoch of the slot: from now on, every task of an earlier one stops.
        Redis not answering: claimed at a later loop. An engine whose slot another engine has
        taken since (one another host started while this one was cut off) stops, as
        `keep_epochs` has it, rather than take the slot back from the new one."""
        epoch = uuid.uuid4().hex[:12]
        key = control.slot_epoch_key(self.id, s.number)
        try:
            current = self.redis.get(key)
            if s.epoch and current is not None and control.text(current) != s.epoch:
                raise RuntimeError("another engine took over; this one stops")
            self.redis.set(key, epoch)
        except redis.RedisError as exc:
            self.error = f"Redis does not answer: {exc}"
            return
        control.wake(self.redis, control.slots_wake_channel(self.id))  # the old task ends now
        s.epoch, s.claimed_at = epoch, time.monotonic()

    def tend(self, s: SlotJob, now: float) -> None:
        """Relaunch a slot whose job ended, in a new epoch after a pause, once no task of an
        earlier epoch can write."""
        if s.running:
            return
        if s.job is not None:  # it failed, or its task was fenced off
            s.failures = 1 if now - s.job_started > HEALTHY_AFTER_S else s.failures + 1
            s.error = s.trouble()
            log.warning("Slot %d failed (%d in a row): %s", s.number, s.failures, s.error)
            if s.failures > len(RELAUNCH_S):
                raise RuntimeError(f"copier slot {s.number} failed {s.failures} times: {s.error}")
            s.job, s.claimed_at = None, None
            s.retry_at = now + RELAUNCH_S[s.failures - 1]
        if s.claimed_at is None:
            if now < s.retry_at:
                return
            self.claim(s)
        if s.claimed_at is None:
            return
        # An engine started where no task of an earlier one can be alive (the console saw its
        # whole process session gone, in local mode) starts its first epochs at once.
        fresh = self.spec.get("fresh") and not s.launched
        if fresh or (now - s.claimed_at >= CLAIM_WAIT_S and not self.older_tasks(s)):
            self.launch(s)

    def older_tasks(self, s: SlotJob) -> bool:
        """Whether a task of an earlier epoch of the slot may still write: its report key is
        there (it deletes it when it stops; it expires once it went silent)."""
        try:
            keys = self.redis.scan_iter(control.slot_report_pattern(self.id, s.number))
            return any(not control.text(key).endswith(f":{s.epoch}") for key in keys)
        except redis.RedisError:
            return True

    def launch(self, s: SlotJob) -> None:
        task_spec: payloads.SlotSpec = {
            "engine": self.id,
            "key": self.key,
            "redis_url": self.spec["redis_url"],
            "redis_sentinels": self.spec.get("redis_sentinels"),
        }
        job = partial(slot.run_slots, spec=task_spec, epoch=s.epoch)
        sc = self.sc
        assert sc is not None  # slots are launched once Spark runs
        rdd = sc.parallelize([s.number], 1)
        s.job_error, s.job_started = None, time.monotonic()

        def run_job() -> None:
            try:
                sc.setJobGroup(s.epoch, f"copier slot {s.number}", interruptOnCancel=True)
                rdd.foreachPartition(job)
            except BaseException as exc:  # reported by the loop
                s.job_error = exc

        s.job = threading.Thread(target=run_job, name=f"slot-{s.number}", daemon=True)
        s.job.start()
        s.launched = True
        for runner in list(self.runners.values()):  # they hand the slot its partitions
            runner.beat_soon()
        log.info("Slot %d: epoch %s started", s.number, s.epoch)

    def keep_epochs(self) -> None:
        """Write each slot's epoch again (Redis may have lost it), and stop if another engine
        took a slot over."""
        try:
            current = self.redis.mget(
                [control.slot_epoch_key(self.id, s.number) for s in self.slots]
            )
            pipe = self.redis.pipeline(transaction=False)
            for s, epoch in zip(self.slots, current, strict=True):
                if epoch is not None and control.text(epoch) != s.epoch:
                    raise RuntimeError("another engine took over; this one stops")
                pipe.set(control.slot_epoch_key(self.id, s.number), s.epoch)
            pipe.execute()
        except redis.RedisError as exc:
            self.error = f"Redis does not answer: {exc}"

    def read_reports(self) -> None:
        keys = [control.slot_report_key(self.id, s.number, s.epoch) for s in self.slots]
        try:
            raws = self.redis.mget(keys)
            known = dict(zip(self.raw_reports, self.reports, strict=False))
            self.reports = [
                known[raw] if raw in known else (json.loads(raw) if raw else None) for raw in raws
            ]
            self.raw_reports = raws
            self.error = ""
        except redis.RedisError as exc:
            self.error = f"Redis does not answer: {exc}"
            return
        for runner in list(self.runners.values()):
            if runner.pending:  # it waits for these to acknowledge a plan
                runner.woken.set()

    def shut_down(self) -> None:
        """Every link leaves (its copiers deliver what they hold), then every slot ends."""
        for runner in self.runners.values():
            runner.stop()
        deadline = time.monotonic() + 60
        while any(r.alive for r in self.runners.values()) and time.monotonic() < deadline:
            self.read_reports()  # what the leaving runners wait on
            time.sleep(LOOP_S)
        for s in self.slots:
            self.claim(s)  # no job runs this epoch: the old tasks see theirs ended
        deadline = time.monotonic() + copier.DRAIN_S + 10
        while any(s.running for s in self.slots) and time.monotonic() < deadline:
            time.sleep(0.2)
        if self.sc is not None and any(s.running for s in self.slots):
            self.sc.cancelAllJobs()
        for destination in self.destinations.all():
            destination.close()
        for watch in self.sources.all():
            watch.stop()

    # --- reporting ----------------------------------------------------------------------------

    def publish_heartbeat(self, state: str) -> None:
        if self.spare:  # it speaks for the engine only once adopted
            return
        self.next_beat = time.monotonic() + BEAT_S
        now = time.time()
        slots: list[payloads.SlotBeat] = []
        for s, report in zip(self.slots, self.reports, strict=True):
            links = report["links"] if report else {}
            records = sum(r["records"] for r in links.values())
            size = sum(r["bytes"] for r in links.values())
            s.window.append((now, records, size))
            while now - s.window[0][0] > RATE_WINDOW_S:
                s.window.popleft()
            slots.append(
                {
                    "slot": s.number,
                    "epoch": s.epoch,
                    "state": "running" if s.running else "restarting",
                    "pid": report["pid"] if report else None,
                    "failures": s.failures,
                    "error": s.error or (report["error"] if report else ""),
                    "records_per_sec": planning.rate(list(s.window), 1),
                    "consumers": report["consumers"] if report else 0,
                    "links": {
                        link: {
                            "partitions": sorted(r["partitions"]),
                            "queued": r.get("queued", 0),
                            "state": r["state"],
                            "error": r["error"],
                        }
                        for link, r in links.items()
                    },
                }
            )
        heartbeat: payloads.EngineHeartbeat = {
            "at_ms": int(now * 1000),
            "started_ms": self.started_ms,
            "pid": self.pid,
            "host": self.spec.get("host", ""),
            "state": state,
            "error": self.error,
            "master": (self.sc.master or "") if self.sc else "",
            "slots": slots,
            "links": {link: r.name for link, r in self.runners.items()},
        }
        try:
            control.write_json(self.redis, control.engine_heartbeat_key(self.id), heartbeat)
        except redis.RedisError as exc:
            log.warning("Cannot report to Redis: %s", exc)


def _warm(_: object) -> None:
    """A spare's warm-up task: the Python worker started, with the copier's modules imported
    (Spark reuses the worker for the slot's task)."""
    from spark_jobs import slot  # noqa: F401


def _source_watch(config: dict[str, str]) -> source_watch.SourceWatch:
    return source_watch.SourceWatch(KafkaAdmin(config, timeout=source_watch.TIMEOUT_S))


def spark_context() -> SparkContext:
    from pyspark import SparkConf, SparkContext

    conf = (
        SparkConf()
        .setAppName("isthmus-engine")
        .set("spark.ui.enabled", "false")
        # A failed task fails its slot's job, and the engine relaunches it in a new epoch,
        # after the old task is known to have stopped; Spark retrying it at once could not
        # wait.
        .set("spark.task.maxFailures", "1")
    )
    sc = SparkContext.getOrCreate(conf)
    sc.setLogLevel("WARN")
    return sc


def main() -> int:
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    logging.getLogger("py4j").setLevel(logging.WARNING)
    spec: payloads.EngineSpec = json.loads(os.environ.pop(control.SPEC_ENV))
    # spark-submit's JVMs start before this line: a restart's timings begin here in the log.
    log.info("The engine's driver starts (pid %d)", os.getpid())
    engine = Engine(spec)

    def stop(signum: int, frame: FrameType | None) -> None:
        engine.stopping = True

    signal.signal(signal.SIGTERM, stop)
    try:
        return engine.run()
    except Exception as exc:
        log.exception("The engine failed")
        engine.error = one_line(exc)
        engine.publish_heartbeat("failed")
        return 1


if __name__ == "__main__":
    sys.exit(main())
