"""Apache Kafka's MirrorMaker 2 (dedicated mode, `connect-mirror-maker`) as the engine to beat."""

from __future__ import annotations

import os
import re
import subprocess

from . import cluster, procs

# Its Connect workers' internal topics (on the destination) and its offset syncs (on the
# source). They are removed before and after each run, so a run never resumes an earlier one.
INTERNAL_DESTINATION = [
    "mm2-configs.source.internal",
    "mm2-offsets.source.internal",
    "mm2-status.source.internal",
]
INTERNAL_SOURCE = ["mm2-offset-syncs.destination.internal"]
# Made by MM2 although heartbeats are off; removed only when the bench made it.
HEARTBEATS = "heartbeats"

# Like Kafka's bin/connect-mirror-maker.sh.
HEAP = "-Xms256m -Xmx2g"

# INFO to its log file, as connect-mirror-maker.sh logs, so a slow start can be read there.
LOG4J = """status = warn
appender.out.type = Console
appender.out.name = out
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = info
rootLogger.appenderRef.out.ref = out
"""

SETTINGS = {
    "clusters": "source, destination",
    "source.bootstrap.servers": cluster.SOURCE,
    "destination.bootstrap.servers": cluster.DESTINATION,
    "source->destination.enabled": "true",
    "destination->source.enabled": "false",
    # Same topic names on both sides, as an Isthmus mirror topic keeps them.
    "replication.policy.class": "org.apache.kafka.connect.mirror.IdentityReplicationPolicy",
    # Only data is compared: no config/ACL sync, heartbeats, checkpoints or group sync.
    "sync.topic.configs.enabled": "false",
    "sync.topic.acls.enabled": "false",
    "emit.heartbeats.enabled": "false",
    "emit.checkpoints.enabled": "false",
    "sync.group.offsets.enabled": "false",
    "refresh.groups.enabled": "false",
    # Kafka's own advice at startup: skips a classpath scan that takes seconds (startup only).
    # Once for MM2 itself, once for the flow's Connect worker (configured as its target's).
    "plugin.discovery": "service_load",
    "destination.plugin.discovery": "service_load",
    # Single-broker clusters.
    "replication.factor": "1",
    "offset-syncs.topic.replication.factor": "1",
    "heartbeats.topic.replication.factor": "1",
    "checkpoints.topic.replication.factor": "1",
    "offset.storage.replication.factor": "1",
    "status.storage.replication.factor": "1",
    "config.storage.replication.factor": "1",
    # The same producer batching as the Isthmus writer and the producer-perf-test limit.
    "destination.producer.linger.ms": "5",
    "destination.producer.batch.size": "1048576",
}


def launch(properties: dict[str, str], tag: str) -> subprocess.Popen:
    """MirrorMaker 2 in dedicated mode with these `mm2.properties`; `tag` names its files."""
    config = cluster.WORK / f"mm2-{tag}.properties"
    config.write_text("".join(f"{k}={v}\n" for k, v in properties.items()))
    log4j = cluster.WORK / "mm2-log4j2.properties"
    log4j.write_text(LOG4J)
    return subprocess.Popen(
        [str(cluster.KAFKA_RUN), "org.apache.kafka.connect.mirror.MirrorMaker", str(config)],
        env={**os.environ, "KAFKA_HEAP_OPTS": HEAP, "KAFKA_LOG4J_CONFIG": str(log4j)},
        stdout=open(cluster.WORK / f"mm2-{tag}.log", "wb"),  # noqa: SIM115 (the child owns it)
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


class MirrorMaker2:
    name = "MirrorMaker 2"
    # It finds new topics matching its pattern only every refresh.topics.interval.seconds
    # (600 s by default), so the bench does not time adding a mirror to a running MM2.
    adds_mirrors_live = False

    def __init__(self, tasks: int | None = None) -> None:
        # tasks.max: one per core by default, as local[*] gives Spark one task slot per core.
        self.tasks = tasks or os.cpu_count() or 1
        self.proc: subprocess.Popen | None = None
        self.made_heartbeats = False

    def mirror_name(self, source_topic: str) -> str:
        return source_topic  # IdentityReplicationPolicy

    def properties(self) -> dict[str, str]:
        """Its mm2.properties but for the topics copied."""
        return {**SETTINGS, "tasks.max": str(self.tasks)}

    def settings(self) -> dict[str, str]:
        return {**self.properties(), "heap (KAFKA_HEAP_OPTS)": HEAP}

    def prepare(self, mirrors: dict[str, str], partitions: int) -> None:
        """Destination topics made beforehand, as for Isthmus (MM2 would make them itself)."""
        cluster.create_topics(cluster.DESTINATION, list(mirrors), partitions)

    def start(self, mirrors: dict[str, str], tag: str) -> subprocess.Popen:
        """Start MM2 copying each source topic of `mirrors` (mirror name -> source name)."""
        self.clean()
        self.made_heartbeats = (
            HEARTBEATS not in cluster.admin(cluster.DESTINATION).list_topic_names()
        )
        topics = "|".join(re.escape(source) for source in sorted(mirrors.values()))
        self.proc = launch({**self.properties(), "source->destination.topics": topics}, tag)
        return self.proc

    def copied(self, ends: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
        return cluster.destination_ends(ends)

    def add_mirrors(self, mirrors: dict[str, str]) -> None:
        raise NotImplementedError("MM2 finds new topics on its own refresh, not on request")

    def error(self) -> str | None:
        return None  # its failures show as the process exiting

    def stop(self) -> None:
        if self.proc is not None:
            procs.stop_group(self.proc)
            self.proc = None
        self.clean()

    def clean(self) -> None:
        destination = list(INTERNAL_DESTINATION)
        if self.made_heartbeats:
            destination.append(HEARTBEATS)
        cluster.delete_topics(cluster.DESTINATION, destination)
        cluster.delete_topics(cluster.SOURCE, INTERNAL_SOURCE)


class MirrorMaker2ExactlyOnce(MirrorMaker2):
    """MM2 with Connect's exactly-once source support (KIP-618): its source tasks write each
    batch and its offsets in one transaction. Dedicated mode needs its internal REST server for
    that (KIP-710), on loopback; the source consumer reads committed records only, without which
    MirrorSourceConnector does not declare exactly-once support."""

    name = "MirrorMaker 2, exactly once"

    def properties(self) -> dict[str, str]:
        return {
            **super().properties(),
            "destination.exactly.once.source.support": "enabled",
            "dedicated.mode.enable.internal.rest": "true",
            "listeners": f"http://127.0.0.1:{EXACTLY_ONCE_REST_PORT}",
            "source.consumer.isolation.level": "read_committed",
        }


EXACTLY_ONCE_REST_PORT = 18093
