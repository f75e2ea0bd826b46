"""The Isthmus engine (one Spark application of long-running copier slots) running one link,
started standalone as the console would start it: spark-submit with the engine's spec, the
link's sealed spec and its mirror set in Redis."""

from __future__ import annotations

import os
import shutil
import subprocess

import redis
from cryptography.fernet import Fernet

from spark_jobs import control, launch, translation

from . import cluster, procs

LINK_ID = "bench"
ENGINE = "bench"
KEY = Fernet.generate_key().decode()  # seals the bench link's spec in Redis
MASTER = "local[*]"
DRIVER_MEMORY = "1g"  # launch.submit_command's default


class Isthmus:
    name = "Isthmus"
    adds_mirrors_live = True

    def __init__(self, tasks: int | None = None) -> None:
        """`tasks`: copier slots of the engine; None leaves the engine's default (one per core
        Spark gives it)."""
        self.tasks = tasks
        self.redis = redis.Redis.from_url(cluster.REDIS_URL)
        self.proc: subprocess.Popen | None = None
        self.mirrors: dict[str, dict[str, str]] = {}
        self.generation = 0
        self.reported_tasks: int | None = None  # as the engine's heartbeat says

    def mirror_name(self, source_topic: str) -> str:
        # Not the source's name, so MM2's identity copy and this one can share the destination.
        return f"{source_topic}.isthmus"

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
        }

    def prepare(self, mirrors: dict[str, str], partitions: int) -> None:
        """The console's part: mirror topics made on the destination before they are copied."""
        if translation.TOPIC not in cluster.admin(cluster.DESTINATION).list_topic_names():
            cluster.create_topic(cluster.DESTINATION, translation.TOPIC, 1, {"retention.ms": "-1"})
        cluster.create_topics(cluster.DESTINATION, list(mirrors), partitions)

    def _publish(self) -> None:
        """The mirror set, with a generation above every one the engine saw."""
        self.generation += 1
        control.write_json(
            self.redis,
            control.mirrors_key(LINK_ID),
            {"mirrors": self.mirrors, "generation": self.generation},
        )

    def _forget(self) -> None:
        """Every key of the bench's link and engine (mirror set, heartbeats, epochs,
        assignments), so a run never starts from what an earlier one left. Only while no
        engine runs."""
        prefix = control.mirrors_key(LINK_ID).rsplit(":", 1)[0]
        keys = [
            *self.redis.scan_iter(f"{prefix}:*"),
            *self.redis.scan_iter(control.engine_pattern(ENGINE)),
        ]
        if keys:
            self.redis.delete(*keys)

    def start(self, mirrors: dict[str, str], tag: str) -> subprocess.Popen:
        """Start the engine copying `mirrors` (mirror name -> source name) for one link."""
        self._forget()
        self.mirrors = {m: {"source_topic": s} for m, s in mirrors.items()}
        self._publish()
        link = {
            "link_id": LINK_ID,
            "link_name": LINK_ID,
            "source": {"bootstrap.servers": cluster.SOURCE},
            "destination": {"bootstrap.servers": cluster.DESTINATION},
        }
        self.redis.hset(control.links_key(ENGINE), LINK_ID, control.seal(KEY, link))
        work = cluster.WORK / f"isthmus-{tag}"
        shutil.rmtree(work, ignore_errors=True)
        # Fresh: the bench's earlier engine, if any, was stopped with its whole process group.
        spec = {
            "engine": ENGINE,
            "key": KEY,
            "redis_url": cluster.REDIS_URL,
            "work_dir": str(work),
            "fresh": True,
        }
        if self.tasks:
            spec["tasks"] = self.tasks
        argv, env = launch.submit_command(spec, master=MASTER, driver_memory=DRIVER_MEMORY)
        self.proc = subprocess.Popen(
            argv,
            env=env,
            stdout=open(cluster.WORK / f"isthmus-{tag}.log", "wb"),  # noqa: SIM115 (child owns it)
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        return self.proc

    def add_mirrors(self, mirrors: dict[str, str]) -> None:
        """A new mirror set with a higher generation: the running engine picks it up."""
        self.mirrors.update({m: {"source_topic": s} for m, s in mirrors.items()})
        self._publish()

    def heartbeat(self) -> dict | None:
        """The link's heartbeat (the engine's, while the link has none yet)."""
        engine = control.read_json(self.redis, control.engine_heartbeat_key(ENGINE))
        if engine and engine.get("slots"):
            self.reported_tasks = len(engine["slots"])
        beat = control.read_json(self.redis, control.heartbeat_key(LINK_ID))
        if engine and engine.get("state") == "failed":
            return engine
        return beat

    def error(self) -> str | None:
        beat = self.heartbeat()
        if beat and beat.get("state") == "failed":
            return beat.get("error") or "failed, no error given"
        return None

    def stop(self) -> None:
        """SIGTERM ends the engine cleanly (its copiers deliver what they queued)."""
        if self.proc is not None:
            procs.stop_group(self.proc)
            self.proc = None
        self._forget()
