"""A cluster link's stream: the Spark Structured Streaming application that copies the link's
mirror topics from its source to its destination, partition for partition and offset for
offset. The console launches one per link:

    ISTHMUS_LINK_SPEC='{...}' spark-submit --master local[*] spark_jobs/link_stream.py

It runs the mirrors named in Redis, restarting its query when that set changes, and reports a
heartbeat and each partition's progress there every second. Where each partition resumes is
read from the destination cluster itself (its end offset and the offset translation), not from
Spark's checkpoint, so a stream killed at any moment neither loses nor repeats a record.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import redis

if __package__ in (None, ""):  # run as a file by spark-submit: import the project's packages
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from infra.kafka_admin import KafkaAdmin
from spark_jobs import control, translation, writer

log = logging.getLogger("isthmus.stream")

HEARTBEAT_SECONDS = 1.0
MAX_RECORDS_PER_BATCH = 400_000
RATE_WINDOW_SECONDS = 10.0


@dataclass(frozen=True)
class Mirror:
    mirror_topic: str
    source_topic: str


def mirrors_from(raw: dict | None) -> tuple[dict[str, Mirror], int] | None:
    """The mirror set the console published, and its generation."""
    if raw is None:
        return None
    mirrors = {name: Mirror(name, m["source_topic"]) for name, m in raw.get("mirrors", {}).items()}
    return mirrors, raw.get("generation", 0)


class LinkStream:
    def __init__(self, spec: dict):
        self.spec = spec
        self.link_id = spec["link_id"]
        self.name = spec["link_name"]
        self.redis = redis.Redis.from_url(
            spec["redis_url"], socket_timeout=2, socket_connect_timeout=2
        )
        self.source = KafkaAdmin(spec["source"], timeout=15)
        self.destination = KafkaAdmin(spec["destination"], timeout=15)
        self.spark = None
        self.query = None
        self.mirrors: dict[str, Mirror] = {}
        self.by_source: dict[str, str] = {}  # source topic -> mirror topic
        self.topic_ids: dict[str, str] = {}  # mirror topic -> its id on the destination
        self.partitions: dict[str, int] = {}  # mirror topic -> partitions
        self.runs: dict[tuple[str, int], translation.Runs] = {}  # (mirror topic, partition)
        self.source_hw: dict[tuple[str, int], int] = {}
        self.dest_ends: dict[tuple[str, int], int] = {}
        self.read_upto: dict[tuple[str, int], int] = {}  # source offsets read and copied
        self.last_batch_ms = 0
        self.fetched_at_ms = 0
        self.lock = threading.Lock()
        self.totals = [0, 0, 0]  # records, bytes, batches
        self.window: deque[tuple[float, int, int]] = deque()
        self.started_ms = int(time.time() * 1000)
        self.stopping = False
        # The generation of the mirror set this stream runs: reported only once no task
        # writes a mirror the set left out (its query was stopped and restarted without it).
        self.generation = 0

    # --- the query -------------------------------------------------------------------

    def start_query(self, mirrors: dict[str, Mirror]) -> None:
        self.stop_query()
        self.mirrors = mirrors
        self.by_source = {m.source_topic: m.mirror_topic for m in mirrors.values()}
        if not mirrors:
            return
        starting = self.resume_positions()
        reader = self.spark.readStream.format("kafka")
        for name, value in self.spec["source_spark"].items():
            reader = reader.option(f"kafka.{name}", value)
        reader = (
            reader.option("subscribe", ",".join(sorted(m.source_topic for m in mirrors.values())))
            .option("startingOffsets", json.dumps(starting))
            .option("includeHeaders", "true")
            # Records gone from the source (compaction, retention) are a gap to translate,
            # not an error; transactions are copied as committed.
            .option("failOnDataLoss", "false")
            .option("kafka.isolation.level", "read_committed")
        )
        # Bounded batches: progress is reported, and a stop or a mirror change is served,
        # between batches, so a catch-up must not be one batch.
        limit = self.spec.get("max_offsets_per_trigger") or MAX_RECORDS_PER_BATCH
        reader = reader.option("maxOffsetsPerTrigger", limit)
        # Spark's checkpoint is not where a partition resumes (the destination is), so each
        # query starts with a fresh one rather than replaying a stale plan.
        checkpoint = Path(self.spec["checkpoint_dir"]) / "query"
        shutil.rmtree(checkpoint, ignore_errors=True)
        self.query = (
            reader.load()
            .selectExpr(*writer.COLUMNS)
            .writeStream.queryName(f"link-{self.name}")
            .foreachBatch(self.write_batch)
            .option("checkpointLocation", str(checkpoint))
            .trigger(processingTime=self.spec.get("trigger", "0 seconds"))
            .start()
        )
        log.info(
            "Link %s: copying %s from %s",
            self.name,
            ", ".join(sorted(mirrors)),
            json.dumps(starting, sort_keys=True),
        )

    def stop_query(self) -> None:
        if self.query is not None:
            self.query.stop()
            self.query = None

    def resume_positions(self) -> dict[str, dict[str, int]]:
        """Where each source partition resumes, read from the destination; a mirror partition
        that starts anywhere but source offset 0 gets its first translation entry now."""
        self.grow_destination()
        self.topic_ids = {
            name: self.destination.describe_topic(name).topic_id for name in self.mirrors
        }
        ends = self.destination.offsets(self.mirror_partitions())
        self.dest_ends = dict(ends)
        stored = translation.load(self.spec["destination"], set(self.topic_ids.values()))
        pins = []
        for (topic, p), end in ends.items():
            runs = stored.get((self.topic_ids[topic], p), translation.Runs()).upto(end)
            if end == 0 and not runs.entries:
                start = self.log_start(self.mirrors[topic], p)
                if start > 0:
                    runs.add(translation.Entry(start, 0))
                    pins.append((self.topic_ids[topic], p, translation.Entry(start, 0)))
            self.runs[topic, p] = runs
        translation.store(self.spec["destination"], pins)
        starting: dict[str, dict[str, int]] = {}
        for (topic, p), end in ends.items():
            source_topic = self.mirrors[topic].source_topic
            starting.setdefault(source_topic, {})[str(p)] = self.runs[topic, p].next_source(end)
        return starting

    def log_start(self, mirror: Mirror, partition: int) -> int:
        """Where a mirror partition with nothing copied yet begins: the source's log start.
        (A mirror created to start at the latest offset or at a time got its first entry
        when it was created.)"""
        where = (mirror.source_topic, partition)
        return self.source.offsets([where], "earliest")[where]

    def grow_destination(self) -> None:
        """Give each mirror topic the partitions its source has gained, before copying them.
        Runs before every batch, so it asks the destination only when a source has grown."""
        counts = self.source.partition_counts([m.source_topic for m in self.mirrors.values()])
        grown = {
            name: counts[m.source_topic]
            for name, m in self.mirrors.items()
            if counts[m.source_topic] > self.partitions.get(name, 0)
        }
        if not grown:
            return
        mirrored = self.destination.partition_counts(list(grown))
        for name, wanted in grown.items():
            if wanted > mirrored[name]:
                self.destination.create_partitions(name, wanted)
                log.info(
                    "Link %s: grew mirror topic %s from %d to %d partitions, as its source",
                    self.name,
                    name,
                    mirrored[name],
                    wanted,
                )
            self.partitions[name] = max(wanted, mirrored[name])

    def mirror_partitions(self) -> list[tuple[str, int]]:
        return [(t, p) for t in sorted(self.mirrors) for p in range(self.partitions[t])]

    # --- one micro-batch ------------------------------------------------------------------

    def write_batch(self, batch, batch_id: int) -> None:
        self.grow_destination()
        ends = self.destination.offsets(self.mirror_partitions())
        targets = {}
        for (topic, p), end in ends.items():
            runs = self.runs.setdefault((topic, p), translation.Runs())
            if runs.last().destination > end:  # the destination lost records: ask it again
                runs = self.runs[topic, p] = self.reload_runs(topic, p, end)
            source_topic = self.mirrors[topic].source_topic
            targets[source_topic, p] = writer.Target(
                topic, self.topic_ids[topic], p, end, runs.next_source(end)
            )
        write = partial(
            writer.write_partitions, targets=targets, destination=self.spec["destination"]
        )
        # One task per source partition costs a task's fixed overhead per partition and
        # batch; merging them (without a shuffle: each source partition stays whole, in order,
        # in one task) into one task per core keeps every core busy at a fraction of the cost.
        slots = self.spark.sparkContext.defaultParallelism
        results = batch.coalesce(slots).mapInArrow(write, writer.RESULT_SCHEMA).collect()
        with self.lock:
            self.dest_ends.update(ends)
            for row in results:
                key = (self.by_source[row.source_topic], row.partition)
                if row.run_dest >= 0:
                    self.runs[key].add(translation.Entry(row.run_source, row.run_dest))
                self.dest_ends[key] = row.dest_end
                self.totals[0] += row.records
                self.totals[1] += row.bytes
            self.totals[2] += 1
            self.last_batch_ms = int(time.time() * 1000)

    def reload_runs(self, topic: str, partition: int, end: int) -> translation.Runs:
        stored = translation.load(self.spec["destination"], {self.topic_ids[topic]})
        return stored.get((self.topic_ids[topic], partition), translation.Runs()).upto(end)

    # --- heartbeat and control ------------------------------------------------------------

    def note_read(self) -> None:
        """How far each source partition has been read by finished batches: past the last
        record copied when the source ends in a gap (a transaction marker, say)."""
        progress = self.query.lastProgress if self.query is not None else None
        if not progress or not progress["sources"]:
            return
        ends = progress["sources"][0]["endOffset"]
        ends = json.loads(ends) if isinstance(ends, str) else ends
        with self.lock:
            for source_topic, offsets in (ends or {}).items():
                if source_topic in self.by_source:
                    for p, offset in offsets.items():
                        self.read_upto[self.by_source[source_topic], int(p)] = offset

    def beat(self, state: str, error: str = "") -> None:
        now = time.time()
        if self.mirrors and state == "running":
            try:
                hw = self.source.offsets(
                    [(self.mirrors[t].source_topic, p) for t, p in self.mirror_partitions()]
                )
                self.source_hw = {(self.by_source[t], p): o for (t, p), o in hw.items()}
                self.fetched_at_ms = int(now * 1000)
            except Exception as exc:  # the source is down: the heartbeat says so
                error = error or str(exc)
        with self.lock:
            records, size, batches = self.totals
            progress, behind = {}, False
            for (topic, p), runs in self.runs.items():
                if topic not in self.mirrors:
                    continue
                last, hw = runs.last(), self.source_hw.get((topic, p), -1)
                progress.setdefault(topic, {})[str(p)] = {
                    "run": [last.source, last.destination],
                    "translated": runs.translated,
                    "source_hw": hw,
                    "read_upto": self.read_upto.get((topic, p), -1),
                }
                end = self.dest_ends.get((topic, p))
                if end is not None:
                    done = max(runs.next_source(end), self.read_upto.get((topic, p), -1))
                    behind = behind or hw > done
        self.window.append((now, records, size))
        while now - self.window[0][0] > RATE_WINDOW_SECONDS:
            self.window.popleft()
        first = self.window[0]
        span = max(now - first[0], 1e-9)
        heartbeat = {
            "at_ms": int(now * 1000),
            "started_ms": self.started_ms,
            "pid": os.getpid(),
            "state": state,
            "error": error,
            "mirrors": sorted(self.mirrors),
            "generation": self.generation,
            "records": records,
            "bytes": size,
            "batches": batches,
            "records_per_sec": round((records - first[1]) / span, 1) if len(self.window) > 1 else 0,
            "bytes_per_sec": round((size - first[2]) / span, 1) if len(self.window) > 1 else 0,
            "fetched_at_ms": self.fetched_at_ms,
            "last_batch_ms": self.last_batch_ms,
            "behind": behind,
        }
        try:
            pipe = self.redis.pipeline()
            pipe.set(control.progress_key(self.link_id), json.dumps(progress))
            pipe.set(control.heartbeat_key(self.link_id), json.dumps(heartbeat))
            pipe.execute()
        except redis.RedisError as exc:
            log.warning("Link %s: cannot report to Redis: %s", self.name, exc)

    def wanted(self) -> tuple[dict[str, Mirror], int] | None:
        try:
            return mirrors_from(control.read_json(self.redis, control.mirrors_key(self.link_id)))
        except redis.RedisError as exc:
            log.warning("Link %s: cannot read the mirror set from Redis: %s", self.name, exc)
            return None

    def run(self) -> int:
        self.beat("starting")
        self.spark = session(self.spec)
        while not self.stopping:
            published = self.wanted()
            if published is not None:
                wanted, generation = published
                if not wanted:  # the query stops below, before the last heartbeat
                    log.info("Link %s has no mirror to run; the stream ends", self.name)
                    self.mirrors, self.generation = {}, generation
                    break
                if wanted != self.mirrors:
                    self.start_query(wanted)  # stops the old query first
                self.generation = generation
            if self.query is not None and not self.query.isActive:
                error = self.query.exception()
                raise RuntimeError(str(error) if error else "the query stopped")
            self.note_read()
            self.beat("running")
            time.sleep(HEARTBEAT_SECONDS)
        self.stop_query()
        self.beat("stopped")
        return 0


def session(spec: dict):
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.appName(f"isthmus-link-{spec['link_name']}")
        .config("spark.sql.shuffle.partitions", "1")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.streaming.stopTimeout", "60s")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("WARN")
    return spark


def main() -> int:
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    logging.getLogger("py4j").setLevel(logging.WARNING)
    spec = json.loads(os.environ.pop(control.SPEC_ENV))
    stream = LinkStream(spec)

    def stop(signum, frame):
        stream.stopping = True

    signal.signal(signal.SIGTERM, stop)
    try:
        return stream.run()
    except Exception as exc:
        log.exception("Link %s: the stream failed", stream.name)
        stream.beat("failed", f"{type(exc).__name__}: {exc}".splitlines()[0])
        return 1


if __name__ == "__main__":
    sys.exit(main())
