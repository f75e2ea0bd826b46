"""A cluster link's application: the Spark driver that copies the link's mirror topics from
its source to its destination, partition for partition and offset for offset. The console
launches one per link:

    ISTHMUS_LINK_SPEC='{...}' spark-submit --master local[*] spark_jobs/link_stream.py

The driver splits the link's mirror partitions between a few long-running copier tasks (see
`copier`; by default one per core Spark gives it) and runs them as one Spark job. It follows
the mirror set the console publishes in Redis and hands partitions to tasks (and takes them
away) through Redis, without stopping the others; it grows mirror topics whose source grew;
it relaunches a failed job after a pause; and it reports a heartbeat and each partition's
progress every second.

Each Spark job is an *epoch*. A new epoch's tasks start only once every task of the previous
one is known to have stopped, so no mirror partition ever has two writers.
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
from functools import partial
from pathlib import Path

import redis

if __package__ in (None, ""):  # run as a file by spark-submit: import the project's packages
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from infra.kafka_admin import KafkaAdmin, KafkaAdminError
from spark_jobs import control, copier, planning, source_watch, translation

log = logging.getLogger("spark_jobs.link_stream")  # not __name__: run as __main__

LOOP_S = 0.2  # how often the driver reads the mirror set (changes reach tasks within ~0.5 s)
BEAT_S = 1.0
RATE_WINDOW_S = 10.0
# A new epoch starts writing no sooner than this after it was claimed: a task of the old one
# that lost the control channel has stopped writing by then (copier.CONTACT_S, plus margin).
CLAIM_WAIT_S = copier.CONTACT_S + 1.5
RELAUNCH_S = [1, 2, 4, 8, 15]  # pauses before relaunching a failed job
HEALTHY_AFTER_S = 60  # a job running this long forgives earlier failures


class LinkApplication:
    def __init__(self, spec: dict):
        self.spec = spec
        self.link_id = spec["link_id"]
        self.name = spec["link_name"]
        self.redis = redis.Redis.from_url(
            spec["redis_url"], socket_timeout=2, socket_connect_timeout=2
        )
        self.source = KafkaAdmin(spec["source"], timeout=15)
        self.watch = source_watch.SourceWatch(spec["source"])
        self.destination = KafkaAdmin(spec["destination"], timeout=15)
        self.translation = translation.Reader(spec["destination"])
        self.sc = None
        self.slots = 0
        self.stopping = False
        self.started_ms = int(time.time() * 1000)
        # The mirror set (mirror -> source topic) and its generation, as published.
        self.mirrors: dict[str, str] = {}
        self.generation = 0
        self.sets: dict[int, list[str]] = {}  # generation -> its mirrors, until acknowledged
        self.acked = 0  # the generation no task writes outside of any more
        self.partitions: dict[str, int] = {}  # mirror -> partitions
        self.topic_ids: dict[str, str] = {}  # mirror -> its id on the destination
        # The current job (epoch) and what its tasks hold.
        self.epoch = ""
        self.job: threading.Thread | None = None
        self.job_error: BaseException | None = None
        self.job_started = 0.0
        self.failures = 0
        self.version = 0
        self.assigned: planning.Holdings = []
        self.home: dict[planning.Ident, int] = {}  # the slot that had each (this epoch)
        self.pending: list[tuple[int, int]] = []  # (generation, version) to acknowledge
        self.planned: tuple | None = None
        # Reporting.
        self.base = [0, 0]  # records and bytes of earlier epochs
        self.seen = [0, 0]  # of the current one
        self.window: deque[tuple[float, int, int]] = deque()
        self.error = ""  # what went wrong since the last heartbeat, which reports it
        self.next_beat = 0.0

    # --- the loop ---------------------------------------------------------------------------

    def run(self) -> int:
        self.watch.start()
        claimed = self.claim()
        self.publish_heartbeat("starting")
        self.sc = spark_context(self.spec)
        cores = self.sc.defaultParallelism
        self.slots = max(1, int(self.spec.get("tasks") or cores))
        if self.sc.master.startswith("local") and self.slots > cores:
            # Tasks beyond the cores would wait forever for one, their partitions uncopied.
            log.warning(
                "Link %s: %d tasks asked, %d cores: running %d", self.name, self.slots, cores, cores
            )
            self.slots = cores
        log.info("Link %s: %d copier task(s)", self.name, self.slots)
        while not self.stopping:
            if not self.follow():
                log.info("Link %s has no mirror to run; the application ends", self.name)
                break
            if self.stopping:  # the job may have ended on the same signal
                break
            if self.job is None or not self.job.is_alive():
                claimed = self.relaunch(claimed)
            if time.monotonic() >= self.next_beat:
                self.grow_mirror_topics()
                reports = self.task_reports()
                self.take_up_acknowledgements(reports)
                if self.job is not None and self.job.is_alive():
                    self.publish_assignments()  # again each second: Redis may have lost them
                self.tell_watch()
                self.publish_heartbeat("running", reports)
            time.sleep(LOOP_S)
        self.end_epoch()
        self.watch.stop()
        self.translation.close()
        self.publish_heartbeat("stopped")
        return 0

    def follow(self) -> bool:
        """Read the published mirror set and hand out its partitions; False once it is empty."""
        try:
            published = control.read_json(self.redis, control.mirrors_key(self.link_id))
            current = self.redis.get(control.epoch_key(self.link_id))
        except redis.RedisError as exc:
            self.error = f"Redis does not answer: {exc}"
            return True  # the tasks stop writing by themselves meanwhile
        if current is not None and self.epoch and current.decode() != self.epoch:
            raise RuntimeError("another application of this link took over; this one stops")
        if published is None:
            return True
        mirrors = {m: v["source_topic"] for m, v in published.get("mirrors", {}).items()}
        if not mirrors:
            self.mirrors, self.generation = {}, published.get("generation", 0)
            return False
        if published.get("generation", 0) != self.generation or mirrors != self.mirrors:
            self.mirrors, self.generation = mirrors, published.get("generation", 0)
            self.sets[self.generation] = sorted(mirrors)
            for gone in set(self.partitions) - set(mirrors):
                self.partitions.pop(gone, None)
                self.topic_ids.pop(gone, None)
            self.tell_watch()
        if self.job is not None and self.job.is_alive():
            self.plan()
        return True

    # --- epochs -----------------------------------------------------------------------------

    def claim(self) -> float:
        """Start a new epoch: from now on, every task of an earlier one stops writing."""
        self.epoch = uuid.uuid4().hex[:12]
        self.redis.set(control.epoch_key(self.link_id), self.epoch)
        return time.monotonic()

    def relaunch(self, claimed: float) -> float:
        """Start the epoch's job once no task of an earlier one can write; a failed job is
        relaunched in a new epoch after a pause."""
        if self.job is not None:  # the job ended: it failed, or its tasks were fenced off
            error = self.job_error or RuntimeError("the copier tasks ended")
            self.failures = (
                1 if time.monotonic() - self.job_started > HEALTHY_AFTER_S else (self.failures + 1)
            )
            self.error = one_line(error)
            log.warning("Link %s: the copy job failed (%s)", self.name, self.error)
            if self.failures > len(RELAUNCH_S):
                raise RuntimeError(f"the copy job failed {self.failures} times: {self.error}")
            self.job = None
            self.publish_heartbeat("running")
            time.sleep(RELAUNCH_S[self.failures - 1])
            claimed = self.claim()
        self.wait_for_old_tasks(claimed)
        self.assigned = [{} for _ in range(self.slots)]
        self.home, self.planned, self.pending = {}, None, []
        self.base = [b + s for b, s in zip(self.base, self.seen, strict=True)]
        self.seen = [0, 0]
        self.plan()
        job = partial(copier.run_slots, spec=self.spec, epoch=self.epoch)
        rdd = self.sc.parallelize(range(self.slots), self.slots)
        self.job_error = None
        self.job_started = time.monotonic()

        def run_job() -> None:
            try:
                self.sc.setJobGroup(self.epoch, f"copy link {self.name}", interruptOnCancel=True)
                rdd.foreachPartition(job)
            except BaseException as exc:  # reported by the driver loop
                self.job_error = exc

        self.job = threading.Thread(target=run_job, name=f"job-{self.epoch}", daemon=True)
        self.job.start()
        log.info("Link %s: epoch %s started", self.name, self.epoch)
        return claimed

    def wait_for_old_tasks(self, claimed: float) -> None:
        """Until every task of an earlier epoch has said it stopped or gone silent (its
        heartbeat key expired), and the claim is old enough for tasks that lost Redis."""
        while True:
            try:
                old = [
                    key
                    for key in self.redis.scan_iter(control.task_pattern(self.link_id))
                    if f":task:{self.epoch}:" not in key.decode()
                ]
            except redis.RedisError:
                old = ["?"]
            if not old and time.monotonic() - claimed >= CLAIM_WAIT_S:
                return
            time.sleep(0.2)

    def end_epoch(self) -> None:
        """Stop the tasks cleanly: they deliver what they hold and go."""
        if not self.epoch:
            return
        self.claim()  # no job runs this epoch: the old tasks see theirs ended
        deadline = time.monotonic() + copier.DRAIN_S + 5
        while self.job is not None and self.job.is_alive() and time.monotonic() < deadline:
            time.sleep(0.2)
        if self.job is not None and self.job.is_alive():
            self.sc.cancelAllJobs()
        self.assigned = []

    # --- handing out partitions ------------------------------------------------------------

    def plan(self) -> None:
        """Hand each task its partitions anew when the mirror set or a topic's partitions
        changed: a new plan version for the tasks to apply and acknowledge."""
        if (self.generation, self.partitions) == self.planned:
            return
        self.grow_mirror_topics()
        self.learn_mirror_topics()
        wanted = planning.wanted_partitions(self.mirrors, self.topic_ids, self.partitions)
        added, ready = self.entries_for(planning.not_held(self.assigned, wanted))
        self.assigned, self.home = planning.assign(self.assigned, self.home, wanted, added)
        if ready:
            self.planned = (self.generation, dict(self.partitions))
        # Each plan is a version the tasks acknowledge, even when it moves nothing: that is
        # how the generation it serves gets acknowledged.
        self.version += 1
        self.pending.append((self.generation, self.version))
        self.publish_assignments()

    def entries_for(self, idents: list[planning.Ident]) -> tuple[dict[planning.Ident, dict], bool]:
        """What a task needs to start copying each partition (its source topic and stored
        offset runs); False when they cannot be read yet (then none starts, and the next loop
        tries again)."""
        if not idents:
            return {}, True
        began = time.monotonic()
        try:
            runs = self.runs_for(idents)
        except (KafkaAdminError, translation.StoreFailed, RuntimeError) as exc:
            # New partitions without a leader yet, say.
            self.error = f"cannot start {len(idents)} partition(s) yet: {exc}"
            log.warning("Link %s: %s", self.name, self.error)
            return {}, False
        log.info(
            "Link %s: handing out %d partition(s) of %s (prepared in %.2f s)",
            self.name,
            len(idents),
            ", ".join(sorted({m for m, _, _ in idents})),
            time.monotonic() - began,
        )
        return {
            (mirror, topic_id, p): {
                "mirror": mirror,
                "source": self.mirrors[mirror],
                "topic_id": topic_id,
                "partition": p,
                "runs": [[e.source, e.destination] for e in runs[mirror, topic_id, p].entries],
            }
            for mirror, topic_id, p in idents
        }, True

    def learn_mirror_topics(self) -> None:
        """Note the id and partitions of each mirror topic new to the set, from the
        destination; one that does not answer is tried again at the next plan."""
        for mirror in self.mirrors:
            if mirror not in self.topic_ids:
                try:
                    info = self.destination.describe_topic(mirror)
                except KafkaAdminError as exc:  # copied once it is back
                    self.error = f"mirror topic {mirror}: {exc}"
                    continue
                # A new mirror has its source's partitions, so its copy starts without
                # waiting for the source; partitions the source gains are added by
                # `grow_mirror_topics`.
                self.topic_ids[mirror] = info.topic_id
                self.partitions[mirror] = max(self.partitions.get(mirror, 0), info.partitions)

    def runs_for(self, idents: list[planning.Ident]) -> dict[planning.Ident, translation.Runs]:
        """The stored offset runs of partitions about to start. A partition with nothing
        copied yet whose source starts above offset 0 gets its first entry now, so its lag
        and translation are right before its first record."""
        stored = self.translation.runs({i[1] for i in idents})
        ends = self.destination.offsets([(m, p) for m, _, p in idents])
        runs, pins = {}, []
        fresh = [i for i in idents if ends[i[0], i[2]] == 0 and not stored.get((i[1], i[2]))]
        if fresh and (problem := self.watch.problem()):  # asking would hold the loop
            raise KafkaAdminError(f"the source cluster does not answer: {problem}")
        starts = self.source.offsets([(self.mirrors[m], p) for m, _, p in fresh], "earliest")
        for mirror, topic_id, p in idents:
            found = stored.get((topic_id, p), translation.Runs())
            start = starts.get((self.mirrors[mirror], p), 0)
            if start > 0:
                found.add(translation.Entry(start, 0))
                pins.append((topic_id, p, translation.Entry(start, 0)))
            runs[mirror, topic_id, p] = found
        translation.store(self.spec["destination"], pins)
        return runs

    def publish_assignments(self) -> None:
        pipe = self.redis.pipeline()
        pipe.set(control.epoch_key(self.link_id), self.epoch)
        for slot, held in enumerate(self.assigned):
            pipe.set(
                control.assignment_key(self.link_id, slot),
                json.dumps(
                    {
                        "epoch": self.epoch,
                        "version": self.version,
                        "partitions": list(held.values()),
                    }
                ),
            )
        try:
            pipe.execute()
        except redis.RedisError as exc:
            self.error = f"Redis does not answer: {exc}"

    def grow_mirror_topics(self) -> None:
        """Give each mirror topic the partitions its source has gained, before copying them."""
        # The source down: grown when it is back.
        grown = planning.grown(self.mirrors, self.watch.counts, self.partitions)
        if not grown:
            return
        try:
            mirrored = self.destination.partition_counts(list(grown))
        except KafkaAdminError as exc:  # grown at a later loop
            self.error = str(exc)
            return
        for mirror, wanted in grown.items():
            if wanted > mirrored[mirror]:
                try:
                    self.destination.create_partitions(mirror, wanted)
                except KafkaAdminError as exc:
                    self.error = f"cannot grow mirror topic {mirror}: {exc}"
                    continue
                log.info(
                    "Link %s: grew mirror topic %s from %d to %d partitions, as its source",
                    self.name,
                    mirror,
                    mirrored[mirror],
                    wanted,
                )
            self.partitions[mirror] = max(wanted, mirrored[mirror])

    # --- reporting ----------------------------------------------------------------------------

    def task_reports(self) -> list[dict | None]:
        """What each task of the running epoch last reported (None: nothing yet)."""
        keys = [control.task_key(self.link_id, self.epoch, s) for s in range(len(self.assigned))]
        if self.job is None or not keys:
            return []
        try:
            return [json.loads(raw) if raw else None for raw in self.redis.mget(keys)]
        except redis.RedisError:
            return []

    def take_up_acknowledgements(self, reports: list[dict | None]) -> None:
        """Note the generation every task has taken up, and forget older mirror sets."""
        if self.job is not None and self.job.is_alive():
            self.acked, self.pending = planning.acknowledged(
                self.pending, reports, self.version, self.acked
            )
        elif self.job is None and not self.assigned:
            self.acked = self.generation  # no job: nothing writes
        for generation in [g for g in self.sets if g < self.acked]:
            del self.sets[generation]

    def tell_watch(self) -> None:
        """Which source partitions to read: those of the mirror set."""
        self.watch.watch(
            sorted(set(self.mirrors.values())),
            [(self.mirrors[m], p) for m in self.mirrors for p in range(self.partitions.get(m, 0))],
        )

    def publish_heartbeat(self, state: str, reports: list[dict | None] = ()) -> None:
        """Publish the application's heartbeat and each mirror partition's progress; what
        went wrong since the last one is reported once (and again if it happens again)."""
        self.next_beat = time.monotonic() + BEAT_S
        now = time.time()
        progress, behind, last_write, errors = planning.mirror_progress(
            list(reports), self.watch.high_watermarks, self.mirrors
        )
        if reports:
            self.seen = [sum(r[k] for r in reports if r) for k in ("records", "bytes")]
        records, size = (b + s for b, s in zip(self.base, self.seen, strict=True))
        self.window.append((now, records, size))
        while now - self.window[0][0] > RATE_WINDOW_S:
            self.window.popleft()
        heartbeat = {
            "at_ms": int(now * 1000),
            "started_ms": self.started_ms,
            "pid": os.getpid(),
            "state": state,
            # The source down first: it explains the rest.
            "error": self.watch.problem() or self.error or "; ".join(errors),
            "mirrors": self.sets.get(self.acked, sorted(self.mirrors)),
            "generation": self.acked,
            "epoch": self.epoch,
            "tasks": self.slots,
            "records": records,
            "bytes": size,
            "records_per_sec": planning.rate(list(self.window), 1),
            "bytes_per_sec": planning.rate(list(self.window), 2),
            "fetched_at_ms": self.watch.fetched_at_ms,
            "last_write_ms": last_write,
            "behind": behind,
        }
        self.error = ""
        try:
            pipe = self.redis.pipeline()
            pipe.set(control.progress_key(self.link_id), json.dumps(progress))
            pipe.set(control.heartbeat_key(self.link_id), json.dumps(heartbeat))
            pipe.execute()
        except redis.RedisError as exc:
            log.warning("Link %s: cannot report to Redis: %s", self.name, exc)


def one_line(error: BaseException) -> str:
    """A Spark job's failure in one line: the Python error of the task, not the JVM's trace."""
    text = str(error)
    for line in text.splitlines():
        if line.startswith(
            (
                "RuntimeError:",
                "KafkaException:",
                "Exception:",
                "ModuleNotFoundError:",
                "ImportError:",
            )
        ):
            return line
        if "Python worker exited unexpectedly" in line:
            return "a copier task's Python worker died (killed, or out of memory)"
    return f"{type(error).__name__}: {text.splitlines()[0] if text else ''}"


def spark_context(spec: dict):
    from pyspark import SparkConf, SparkContext

    conf = (
        SparkConf()
        .setAppName(f"isthmus-link-{spec['link_name']}")
        .set("spark.ui.enabled", "false")
        # A failed task fails the job, and the driver relaunches it in a new epoch, after the
        # old tasks are known to have stopped; Spark retrying it at once could not wait.
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
    spec = json.loads(os.environ.pop(control.SPEC_ENV))
    app = LinkApplication(spec)

    def stop(signum, frame):
        app.stopping = True

    signal.signal(signal.SIGTERM, stop)
    try:
        return app.run()
    except Exception as exc:
        log.exception("Link %s: the application failed", app.name)
        app.error = one_line(exc)
        app.publish_heartbeat("failed")
        return 1


if __name__ == "__main__":
    sys.exit(main())
