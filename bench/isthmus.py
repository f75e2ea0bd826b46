"""The Isthmus engine (one Spark application of long-running copier slots), started standalone
as the console would start it: spark-submit with the engine's spec, each link's sealed spec and
its mirror set in Redis. `Engine` runs any number of links; `Isthmus` is the bench's one link
of mirrors, `IsthmusFlows` the same link copying into ordinary topics by merge flows."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import time
import uuid
from typing import cast

import psutil
import redis
from confluent_kafka import Consumer, KafkaException, TopicPartition
from cryptography.fernet import Fernet

from infra.consuming import Consumed
from spark_jobs import control, launch, merging, translation

from . import cluster, procs

LINK_ID = "bench"
MASTER = "local[*]"
DRIVER_MEMORY = "1g"  # launch.submit_command's default


class Engine:
    """An engine of the bench's own (`engine` names its Redis keys), its links added and
    changed through Redis as the console does."""

    def __init__(self, engine: str, tag: str, tasks: int | None = None):
        self.engine, self.tag, self.tasks = engine, tag, tasks
        self.key = Fernet.generate_key().decode()  # seals the links' specs in Redis
        self.redis = redis.Redis.from_url(cluster.REDIS_URL)
        self.proc: subprocess.Popen | None = None
        self.generation = 0  # above every one the engine saw

    def start(self) -> subprocess.Popen:
        """Start the engine, with no link yet (what an earlier run left in Redis is gone)."""
        self.forget()
        work = cluster.WORK / self.tag
        shutil.rmtree(work, ignore_errors=True)
        spec: control.EngineSpec = {
            "engine": self.engine,
            "key": self.key,
            "redis_url": cluster.REDIS_URL,
            "work_dir": str(work),
            "tasks": self.tasks or None,
            "fresh": True,  # the bench's earlier engine was stopped with its whole group
        }
        argv, env = launch.submit_command(spec, master=MASTER, driver_memory=DRIVER_MEMORY)
        self.proc = subprocess.Popen(
            argv,
            env=env,
            stdout=open(cluster.WORK / f"{self.tag}.log", "wb"),  # noqa: SIM115 (child owns it)
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        return self.proc

    def add_link(
        self,
        link_id: str,
        mirrors: dict[str, str],
        flows: dict[str, control.FlowSpec] | None = None,
        path: str = "batch",
    ) -> None:
        """A link copying `mirrors` (mirror name -> source name) and `flows` from the source
        cluster, its mirrors on the copy `path`."""
        self.set_mirrors(link_id, mirrors, flows)
        spec: control.LinkSpec = {
            "link_id": link_id,
            "link_name": link_id,
            "source": {"bootstrap.servers": cluster.SOURCE},
            "destination": {"bootstrap.servers": cluster.DESTINATION},
            "path": path,
        }
        self.redis.hset(control.links_key(self.engine), link_id, control.seal(self.key, spec))
        control.wake(self.redis, control.engine_wake_channel(self.engine))

    def set_mirrors(
        self,
        link_id: str,
        mirrors: dict[str, str],
        flows: dict[str, control.FlowSpec] | None = None,
    ) -> None:
        """The link's mirror set (mirror name -> source name) and merge flows (by id, as
        `publish.flow_spec` makes them), as `publish.publish` writes them."""
        self.generation += 1
        mirror_set: control.MirrorSet = {
            "mirrors": {m: {"source_topic": s} for m, s in mirrors.items()},
            "flows": flows or {},
            "generation": self.generation,
        }
        control.write_json(self.redis, control.mirrors_key(link_id), mirror_set)
        control.wake(self.redis, control.engine_wake_channel(self.engine))

    def heartbeat(self, link_id: str) -> control.LinkHeartbeat | control.EngineHeartbeat | None:
        """The link's heartbeat, or the engine's once it failed."""
        engine = control.engine_heartbeat(self.redis, self.engine)
        if engine.get("state") == "failed":
            return engine
        return control.link_heartbeat(self.redis, link_id) or None

    def slots(self) -> int | None:
        engine = control.engine_heartbeat(self.redis, self.engine)
        return len(engine["slots"]) if engine.get("slots") else None

    def stop(self) -> None:
        """End the engine as the console does: SIGTERM to its Python driver, which ends it
        cleanly (its copiers deliver what they queued); the whole group after a minute."""
        if self.proc is not None:
            children = []
            with contextlib.suppress(psutil.Error):
                children = psutil.Process(self.proc.pid).children(recursive=True)
            for child in children:
                with contextlib.suppress(psutil.Error):  # one gone meanwhile, or a zombie
                    if launch.is_engine_driver(child.cmdline()):
                        child.terminate()
            procs.wait_exit(self.proc, 60)
            procs.stop_group(self.proc)
            self.proc = None
        self.forget()

    def forget(self) -> None:
        """Every key of the engine and its links (mirror sets, heartbeats, epochs,
        assignments), so a run never starts from what an earlier one left. Only while it does
        not run."""
        links = [control.text(link) for link in self.redis.hkeys(control.links_key(self.engine))]
        keys = [*self.redis.scan_iter(control.engine_pattern(self.engine))]
        for link in links:
            keys += self.redis.scan_iter(f"isthmus:stream:{link}:*")
        if keys:
            self.redis.delete(*keys)


class Isthmus:
    name = "Isthmus"
    adds_mirrors_live = True

    def __init__(self, tasks: int | None = None, path: str = "batch") -> None:
        """`tasks`: copier slots of the engine; None leaves the engine's default (one per core
        Spark gives it). `path`: the mirrors' copy path (the engine's default, the batch
        path, or the record path)."""
        self.tasks, self.path = tasks, path
        if path != "batch":
            self.name = f"Isthmus, {path} path"
        self.engine: Engine | None = None
        self.mirrors: dict[str, str] = {}
        self.reported_tasks: int | None = None  # as the engine's heartbeat says

    def mirror_name(self, source_topic: str) -> str:
        # Not the source's name, so MM2's identity copy and this one can share the destination.
        return f"{source_topic}.isthmus" + ("" if self.path == "batch" else f"-{self.path}")

    def settings(self) -> dict[str, str]:
        tasks = (
            str(self.tasks)
            if self.tasks
            else f"the engine's default: one per core `{MASTER}` gives ({os.cpu_count()} here)"
        )
        if self.reported_tasks is not None:
            tasks += f"; its heartbeat reported {self.reported_tasks}"
        return {
            "spark.master": MASTER,
            "driver memory": DRIVER_MEMORY,
            "driver JVM options": launch.DRIVER_JAVA_OPTIONS,
            "copier slots": tasks,
            "copy path (mirror.copy.path)": self.path,
        }

    def prepare(self, mirrors: dict[str, str], partitions: int) -> None:
        """The console's part: mirror topics made on the destination before they are copied."""
        if translation.TOPIC not in cluster.admin(cluster.DESTINATION).list_topic_names():
            cluster.create_topic(cluster.DESTINATION, translation.TOPIC, 1, {"retention.ms": "-1"})
        cluster.create_topics(cluster.DESTINATION, list(mirrors), partitions)

    def start(self, mirrors: dict[str, str], tag: str) -> subprocess.Popen:
        """Start the engine copying `mirrors` (mirror name -> source name) for one link."""
        self.engine = Engine("bench", f"isthmus-{tag}", self.tasks)
        proc = self.engine.start()
        self.mirrors = dict(mirrors)
        self.engine.add_link(LINK_ID, self.mirrors, path=self.path)
        return proc

    def copied(self, ends: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
        return cluster.destination_ends(ends)

    def add_mirrors(self, mirrors: dict[str, str]) -> None:
        """A new mirror set with a higher generation: the running engine picks it up."""
        self.mirrors.update(mirrors)
        assert self.engine is not None  # started
        self.engine.set_mirrors(LINK_ID, self.mirrors)

    def heartbeat(self) -> control.LinkHeartbeat | control.EngineHeartbeat | None:
        assert self.engine is not None  # started
        self.reported_tasks = self.engine.slots() or self.reported_tasks
        return self.engine.heartbeat(LINK_ID)

    def error(self) -> str | None:
        beat = self.heartbeat()
        if beat and beat.get("state") == "failed":
            return beat.get("error") or "failed, no error given"
        return None

    def stop(self) -> None:
        if self.engine is not None:
            self.engine.stop()


class IsthmusFlows(Isthmus):
    """The same engine and link copying each source topic into an ordinary topic by a merge
    flow (spark_jobs/merging.py): exactly once, in transactions, partition to partition."""

    name = "Isthmus merge flow"
    adds_mirrors_live = False  # the add case times mirrors

    def __init__(self, tasks: int | None = None) -> None:
        super().__init__(tasks)
        self.flows: dict[str, control.FlowSpec] = {}
        self.partitions = 1
        self.reader: Consumer | None = None

    def mirror_name(self, source_topic: str) -> str:
        return f"{source_topic}.flow"

    def prepare(self, mirrors: dict[str, str], partitions: int) -> None:
        """The console's part: the flows' progress topic and their destination topics."""
        if merging.PROGRESS_TOPIC not in cluster.admin(cluster.DESTINATION).list_topic_names():
            cluster.create_topic(
                cluster.DESTINATION,
                merging.PROGRESS_TOPIC,
                merging.PROGRESS_PARTITIONS,
                {"cleanup.policy": "compact"},
            )
        cluster.create_topics(cluster.DESTINATION, list(mirrors), partitions)
        self.partitions = partitions

    def start(self, mirrors: dict[str, str], tag: str) -> subprocess.Popen:
        self.engine = Engine("bench", f"flows-{tag}", self.tasks)
        proc = self.engine.start()
        clusters = {
            end: cluster.admin(address).describe_cluster().cluster_id
            for end, address in (("source", cluster.SOURCE), ("destination", cluster.DESTINATION))
        }
        self.flows = {}
        for into, source in mirrors.items():
            flow_id = str(uuid.uuid4())  # fresh: no progress of an earlier run is resumed
            self.flows[flow_id] = {
                "id": flow_id,
                "name": f"bench.{source}",
                "source": source,
                "destination": into,
                "mapping": "one-to-one",
                "parts": min(self.partitions, merging.PARTS),  # as the console makes it
                "source_cluster_id": clusters["source"],
                "destination_cluster_id": clusters["destination"],
            }
        self.engine.add_link(LINK_ID, {}, self.flows)
        return proc

    def copied(self, ends: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
        """How far each partition is copied and committed, as a reader of the destination
        sees it: the origin offset of its last committed record, plus one. A committed reader's
        high watermark is the last stable offset: read the few offsets before it (the last
        record, then its transaction's marker) until the position reaches that marker. Never
        waits for an end-of-partition event: a committed reader gets none while the flow keeps
        committing, and the call must stay short, since the copy is timed around it."""
        if self.reader is None:
            self.reader = Consumer(
                {
                    "bootstrap.servers": cluster.DESTINATION,
                    "group.id": "bench-flow-reader",
                    "isolation.level": "read_committed",
                    "enable.auto.commit": False,
                }
            )
        found: dict[tuple[str, int], int] = {}
        stable: dict[tuple[str, int], int] = {}
        for topic, partition in ends:
            try:
                _, high = self.reader.get_watermark_offsets(
                    TopicPartition(topic, partition), timeout=5
                )
            except KafkaException:
                continue  # not visible yet
            if high > 0:
                stable[(topic, partition)] = high
        starts = [TopicPartition(t, p, max(0, high - 4)) for (t, p), high in stable.items()]
        self.reader.assign(starts)
        deadline = time.monotonic() + 5
        while starts and time.monotonic() < deadline:
            positions = self.reader.position(starts)
            # At the stable offset less one lies the last transaction's marker, which the
            # position passes only with a later fetch: the record before it is the last.
            if all(tp.offset >= stable[(tp.topic, tp.partition)] - 1 for tp in positions):
                break
            for msg in cast("list[Consumed]", self.reader.consume(100, 0.1)):
                if msg.error() is None:
                    header = dict(msg.headers() or [])[merging.ORIGIN]
                    assert isinstance(header, bytes)  # as a consumer hands it over
                    origin = header.decode().split(",")
                    found[(msg.topic(), msg.partition())] = int(origin[3]) + 1
        return found

    def stop(self) -> None:
        if self.reader is not None:
            self.reader.close()
            self.reader = None
        super().stop()
        cluster.delete_topics(cluster.DESTINATION, [merging.PROGRESS_TOPIC])
