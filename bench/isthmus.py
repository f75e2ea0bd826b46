"""The Isthmus link stream (spark_jobs/link_stream.py), started standalone as the console
would start it: spark-submit with a link spec, the mirror set in Redis."""

from __future__ import annotations

import shutil
import subprocess

import redis

from spark_jobs import control, launch, translation
from spark_jobs.link_stream import MAX_RECORDS_PER_BATCH

from . import cluster, procs

LINK_ID = "bench"
MASTER = "local[*]"
DRIVER_MEMORY = "1g"  # launch.submit_command's default


class Isthmus:
    name = "Isthmus"

    def __init__(self) -> None:
        self.redis = redis.Redis.from_url(cluster.REDIS_URL)
        self.proc: subprocess.Popen | None = None

    def mirror_name(self, source_topic: str) -> str:
        # Not the source's name, so MM2's identity copy and this one can share the destination.
        return f"{source_topic}.isthmus"

    def settings(self) -> dict[str, str]:
        return {
            "spark.master": MASTER,
            "driver memory": DRIVER_MEMORY,
            "trigger": "0 seconds (the stream's default: micro-batches back to back)",
            "maxOffsetsPerTrigger": f"{MAX_RECORDS_PER_BATCH} (the stream's default)",
            "writer": "confluent-kafka, acks=all, idempotent, linger.ms=5, batch.size=1 MB",
            "Spark Kafka source": "kafka.isolation.level=read_committed, client defaults",
        }

    def prepare(self, mirrors: dict[str, str], partitions: int) -> None:
        """The console's part: mirror topics made on the destination before the stream runs."""
        if translation.TOPIC not in cluster.admin(cluster.DESTINATION).list_topic_names():
            cluster.admin(cluster.DESTINATION).create_topic(
                translation.TOPIC, 1, None, {"retention.ms": "-1"}
            )
        for mirror in mirrors:
            cluster.create_topic(cluster.DESTINATION, mirror, partitions)

    def start(self, mirrors: dict[str, str], tag: str) -> subprocess.Popen:
        """Start a stream copying `mirrors` (mirror name -> source name)."""
        control.write_json(
            self.redis,
            control.mirrors_key(LINK_ID),
            {"mirrors": {m: {"source_topic": s, "start": "earliest"} for m, s in mirrors.items()}},
        )
        self.redis.delete(control.heartbeat_key(LINK_ID), control.progress_key(LINK_ID))
        checkpoint = cluster.WORK / f"isthmus-{tag}"
        shutil.rmtree(checkpoint, ignore_errors=True)
        spec = {
            "link_id": LINK_ID,
            "link_name": LINK_ID,
            "redis_url": cluster.REDIS_URL,
            "source": {"bootstrap.servers": cluster.SOURCE},
            "destination": {"bootstrap.servers": cluster.DESTINATION},
            "source_spark": {"bootstrap.servers": cluster.SOURCE},
            "checkpoint_dir": str(checkpoint),
        }
        argv, env = launch.submit_command(spec, master=MASTER, driver_memory=DRIVER_MEMORY)
        self.proc = subprocess.Popen(
            argv,
            env=env,
            stdout=open(cluster.WORK / f"isthmus-{tag}.log", "wb"),  # noqa: SIM115 (child owns it)
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        return self.proc

    def micro_batches(self) -> int | None:
        """Micro-batches written so far, from the stream's heartbeat (once a second)."""
        beat = control.read_json(self.redis, control.heartbeat_key(LINK_ID))
        return beat["batches"] if beat else None

    def stop(self) -> None:
        """An empty mirror set ends the stream cleanly; a signal if it does not."""
        control.write_json(self.redis, control.mirrors_key(LINK_ID), {"mirrors": {}})
        if self.proc is not None:
            if not procs.wait_exit(self.proc, 30):
                cluster.log("Isthmus did not stop on an empty mirror set; sending SIGTERM")
            procs.stop_group(self.proc)
            self.proc = None
        keys = [control.mirrors_key(LINK_ID), control.heartbeat_key(LINK_ID)]
        self.redis.delete(*keys, control.progress_key(LINK_ID))
