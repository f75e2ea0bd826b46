"""Topics and configs through the Kafka admin adapter: what a topic is as Kafka describes it
(`TopicInfo`, `TopicDetail`, `ConfigDetail`, `ConfigValue`), a topic to create (`NewTopicSpec`,
in batches the controller takes: `topic_batches`), and `TopicCalls`, `KafkaAdmin`'s calls that
list, describe, create, grow and delete topics, delete their oldest records, and read and change
topic and broker configs.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from confluent_kafka import KafkaException, TopicCollection, TopicPartition
from confluent_kafka.admin import (
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewPartitions,
    NewTopic,
    ResourceType,
    TopicDescription,
)

from .kafka_errors import AdminRequests, KafkaAdminError, TopicNotFound


def kafka_id(text: str) -> str:
    """A topic id as Kafka's own tools print it (URL-safe base64, no padding), from
    librdkafka's standard base64 form: DL5/DPMpSd+fkWYJY5QgxQ -> DL5_DPMpSd-fkWYJY5QgxQ."""
    return text.replace("+", "-").replace("/", "_").rstrip("=")


@dataclass(frozen=True)
class TopicInfo:
    name: str
    topic_id: str
    partitions: int
    replication_factor: int


@dataclass(frozen=True)
class PartitionReplicas:
    partition: int
    leader: int | None
    replicas: list[int]
    isr: list[int]
    log_start_offset: int
    log_end_offset: int
    leader_epoch: int | None


@dataclass(frozen=True)
class TopicDetail:
    """A topic with each partition's leader, replicas and in-sync replicas."""

    name: str
    is_internal: bool
    partitions: list[PartitionReplicas]  # log offsets -1: not read here


@dataclass(frozen=True)
class ConfigDetail:
    """One config as Kafka describes it, with where its value comes from."""

    name: str
    value: str | None
    source: str  # Kafka's names: DYNAMIC_TOPIC_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG, ...
    is_default: bool
    is_read_only: bool
    is_sensitive: bool
    synonyms: list[tuple[str, str | None, str]]  # (name, value, source), most specific first


@dataclass(frozen=True)
class NewTopicSpec:
    """A topic to create: `replication_factor` None is the cluster's default."""

    name: str
    partitions: int
    replication_factor: int | None
    configs: dict[str, str]


# A KRaft controller refuses a request that would write more than 10,000 metadata records
# ("excessively large batch operation"): a new topic writes one, and one for each of its
# partitions and configs. 1,000 topics of 10 partitions are 11,000.
MAX_RECORDS_PER_REQUEST = 5_000


def topic_batches(topics: list[NewTopicSpec]) -> Iterator[list[NewTopicSpec]]:
    """`topics` in order, in batches the controller takes in one request each."""
    batch: list[NewTopicSpec] = []
    records = 0
    for topic in topics:
        cost = 1 + max(topic.partitions, 1) + len(topic.configs or {})
        if batch and records + cost > MAX_RECORDS_PER_REQUEST:
            yield batch
            batch, records = [], 0
        batch.append(topic)
        records += cost
    if batch:
        yield batch


@dataclass(frozen=True)
class ConfigValue:
    value: str | None
    is_set: bool  # set on the topic itself rather than inherited from a default


def config_details(entries: dict[str, ConfigEntry]) -> list[ConfigDetail]:
    """Described configs, by name, as `ConfigDetail`s with their sources named as Kafka names
    them (DYNAMIC_BROKER_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG, ...)."""

    def source(entry: ConfigEntry) -> str:
        return ConfigSource(entry.source).name if entry.source is not None else "UNKNOWN"

    return [
        ConfigDetail(
            key,
            entry.value,
            source(entry),
            entry.is_default,
            entry.is_read_only,
            entry.is_sensitive,
            [(s.name, s.value, source(s)) for s in entry.synonyms.values()],
        )
        for key, entry in sorted(entries.items())
    ]


class TopicCalls(AdminRequests):
    """`KafkaAdmin`'s calls on topics and configs."""

    def broker_configs(self, names: list[str]) -> dict[str, str | None]:
        """The values of the named configs on one of the cluster's brokers (each broker of a
        cluster is normally configured alike)."""
        found = self._wait(
            self._client.describe_cluster(request_timeout=self.timeout), "describe the cluster"
        )
        broker = found.nodes[0].id
        resource = ConfigResource(ResourceType.BROKER, str(broker))
        futures = self._client.describe_configs([resource], request_timeout=self.timeout)
        entries = self._wait(futures[resource], f"describe broker {broker}'s configs")
        return {name: entries[name].value if name in entries else None for name in names}

    def topic_partition_counts(self) -> dict[str, int]:
        """Every topic with its number of partitions, from one metadata request."""
        try:
            metadata = self._client.list_topics(timeout=self.timeout)
        except KafkaException as exc:
            raise self._fail("list the topics", exc) from exc
        return {name: len(topic.partitions) for name, topic in metadata.topics.items()}

    def describe_topic(self, name: str) -> TopicInfo:
        futures = self._client.describe_topics(
            TopicCollection([name]), request_timeout=self.timeout
        )
        result = self._wait(futures[name], f"describe topic {name!r}")
        replicas = len(result.partitions[0].replicas) if result.partitions else 0
        return TopicInfo(name, kafka_id(str(result.topic_id)), len(result.partitions), replicas)

    def _described(self, names: Iterable[str]) -> dict[str, TopicDescription]:
        """Kafka's description of each topic of `names` that exists, in one request."""
        names = sorted(set(names))
        if not names:
            return {}
        futures = self._client.describe_topics(TopicCollection(names), request_timeout=self.timeout)
        found = {}
        for name, future in futures.items():
            with contextlib.suppress(TopicNotFound):
                found[name] = self._wait(future, f"describe topic {name!r}")
        return found

    def describe_topics(self, names: Iterable[str]) -> dict[str, TopicInfo]:
        """Each topic that exists of `names`, in one request; missing ones are left out."""
        return {
            name: TopicInfo(
                name,
                kafka_id(str(d.topic_id)),
                len(d.partitions),
                len(d.partitions[0].replicas) if d.partitions else 0,
            )
            for name, d in self._described(names).items()
        }

    def partition_counts(self, names: list[str]) -> dict[str, int]:
        """How many partitions each topic has, in one request."""
        futures = self._client.describe_topics(TopicCollection(names), request_timeout=self.timeout)
        return {
            name: len(self._wait(future, f"describe topic {name!r}").partitions)
            for name, future in futures.items()
        }

    def topic_details(self, names: Iterable[str]) -> dict[str, TopicDetail]:
        """Each topic of `names` that exists, with its partitions' replicas, in one request."""
        return {
            name: TopicDetail(
                name,
                d.is_internal,
                [
                    PartitionReplicas(
                        partition=p.id,
                        leader=p.leader.id if p.leader else None,
                        replicas=[r.id for r in p.replicas],
                        isr=[r.id for r in p.isr],
                        log_start_offset=-1,
                        log_end_offset=-1,
                        leader_epoch=None,
                    )
                    for p in sorted(d.partitions, key=lambda p: p.id)
                ],
            )
            for name, d in self._described(names).items()
        }

    def topics_configs(self, names: Iterable[str]) -> dict[str, dict[str, ConfigValue]]:
        """`topic_configs` of each of `names`, in one request."""
        resources = {name: ConfigResource(ResourceType.TOPIC, name) for name in sorted(set(names))}
        if not resources:
            return {}
        futures = self._client.describe_configs(
            list(resources.values()), request_timeout=self.timeout
        )
        found = {}
        for name, resource in resources.items():
            entries = self._wait(futures[resource], f"read the configs of topic {name!r}")
            found[name] = {
                c.name: ConfigValue(c.value, c.source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value)
                for c in entries.values()
            }
        return found

    def topic_config_details(self, name: str) -> list[ConfigDetail]:
        """Every config of topic `name`, set or not, with its source and synonyms."""
        resource = ConfigResource(ResourceType.TOPIC, name)
        futures = self._client.describe_configs([resource], request_timeout=self.timeout)
        entries = self._wait(futures[resource], f"read the configs of topic {name!r}")
        return config_details(entries)

    def create_topics(
        self, topics: list[NewTopicSpec], validate_only: bool = False
    ) -> dict[str, KafkaAdminError]:
        """Create (or, with `validate_only`, have the controller check) every topic, in as few
        requests as the controller takes (`topic_batches`); what each failed with, by name
        (none: all of them were made)."""
        failed = {}
        for batch in topic_batches(topics):
            new = [
                NewTopic(t.name, t.partitions, t.replication_factor or -1, config=t.configs)
                for t in batch
            ]
            futures = self._client.create_topics(
                new, request_timeout=self.timeout, validate_only=validate_only
            )
            for name, future in futures.items():
                try:
                    self._wait(future, f"create topic {name!r}")
                except KafkaAdminError as exc:
                    failed[name] = exc
        return failed

    def delete_topics(self, names: Iterable[str]) -> None:
        """Delete each of `names` that exists, in one request."""
        names = sorted(set(names))
        if not names:
            return
        futures = self._client.delete_topics(names, request_timeout=self.timeout)
        for name, future in futures.items():
            with contextlib.suppress(TopicNotFound):
                self._wait(future, f"delete topic {name!r}")

    def delete_topic(self, name: str) -> None:
        futures = self._client.delete_topics([name], request_timeout=self.timeout)
        self._wait(futures[name], f"delete topic {name!r}")

    def delete_records(self, topic: str, before: dict[int, int]) -> None:
        """Move each partition's log start up to `before[p]`: the records below it go."""
        wanted = [TopicPartition(topic, p, o) for p, o in before.items() if o > 0]
        if not wanted:
            return
        futures = self._client.delete_records(wanted, request_timeout=self.timeout)
        for future in futures.values():
            self._wait(future, f"delete the oldest records of {topic!r}")

    def create_partitions(self, name: str, total: int) -> None:
        futures = self._client.create_partitions(
            [NewPartitions(name, total)], request_timeout=self.timeout
        )
        self._wait(futures[name], f"grow topic {name!r} to {total} partitions")

    def alter_topic_configs(self, name: str, to_set: dict[str, str], to_delete: list[str]) -> None:
        entries = [
            ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET)
            for k, v in to_set.items()
        ] + [
            ConfigEntry(k, None, incremental_operation=AlterConfigOpType.DELETE) for k in to_delete
        ]
        resource = ConfigResource(ResourceType.TOPIC, name, incremental_configs=entries)
        futures = self._client.incremental_alter_configs([resource], request_timeout=self.timeout)
        self._wait(futures[resource], f"change the configs of topic {name!r}")
