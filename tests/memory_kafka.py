"""An in-memory Kafka at the seams of `replication.kafka.connections`: clusters with topics
(partitions, log start and end offsets, configs), ACLs, consumer groups and an id, answering
the same calls `infra.kafka_admin.KafkaAdmin` answers, in the same words where a caller reads
them (unreachable, no such topic, no authorizer, a group in use); and the records of their
partitions, for `infra.kafka_copy.Records`'s calls (a truncate-and-restore's local copies, a
reverse's look past its fence, the timestamps a mirror's lag in time is read from).

The database tests (tests/db) choose it with the settings ISTHMUS_KAFKA_ADMIN and
ISTHMUS_KAFKA_RECORDS (the `memory_clusters` fixture), to check refusals, state changes,
approvals and plans without brokers. No engine copies between these clusters, so nothing here
proves that mirroring works: the integration tests do, on real brokers.
"""

from __future__ import annotations

import re
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    ResourcePatternType,
    ResourceType,
)

from infra.kafka_admin import AdminCalls, ClusterDescription, kafka_uuid
from infra.kafka_brokers import BrokerNode
from infra.kafka_copy import Headers, Record, record_size
from infra.kafka_errors import AuthorizerDisabled, KafkaAdminError, TopicNotFound, Unreachable
from infra.kafka_groups import GroupDetail, GroupMember, GroupOffsets
from infra.kafka_topics import (
    ConfigDetail,
    ConfigValue,
    NewTopicSpec,
    PartitionReplicas,
    TopicDetail,
    TopicInfo,
)
from spark_jobs.translation import Runs

# Every topic config a stock Kafka 4 broker describes, with its default: a topic shows them all.
TOPIC_DEFAULTS = {
    "cleanup.policy": "delete",
    "compression.type": "producer",
    "compression.gzip.level": "-1",
    "compression.lz4.level": "9",
    "compression.zstd.level": "3",
    "delete.retention.ms": "86400000",
    "file.delete.delay.ms": "60000",
    "flush.messages": "9223372036854775807",
    "flush.ms": "9223372036854775807",
    "follower.replication.throttled.replicas": "",
    "index.interval.bytes": "4096",
    "leader.replication.throttled.replicas": "",
    "local.retention.bytes": "-2",
    "local.retention.ms": "-2",
    "max.compaction.lag.ms": "9223372036854775807",
    "max.message.bytes": "1048588",
    "message.timestamp.after.max.ms": "3600000",
    "message.timestamp.before.max.ms": "9223372036854775807",
    "message.timestamp.type": "CreateTime",
    "min.cleanable.dirty.ratio": "0.5",
    "min.compaction.lag.ms": "0",
    "min.insync.replicas": "1",
    "preallocate": "false",
    "remote.storage.enable": "false",
    "retention.bytes": "-1",
    "retention.ms": "604800000",
    "segment.bytes": "1073741824",
    "segment.index.bytes": "10485760",
    "segment.jitter.ms": "0",
    "segment.ms": "604800000",
    "unclean.leader.election.enable": "false",
}
# The values a broker takes for each (Kafka's ConfigDef types; lists and enums by their choices).
_LONGS = {
    "delete.retention.ms", "file.delete.delay.ms", "flush.messages", "flush.ms",
    "local.retention.bytes", "local.retention.ms", "max.compaction.lag.ms",
    "message.timestamp.after.max.ms", "message.timestamp.before.max.ms", "min.compaction.lag.ms",
    "retention.bytes", "retention.ms", "segment.jitter.ms", "segment.ms",
}  # fmt: skip
_INTS = {
    "compression.gzip.level", "compression.lz4.level", "compression.zstd.level",
    "index.interval.bytes", "max.message.bytes", "min.insync.replicas", "segment.bytes",
    "segment.index.bytes",
}  # fmt: skip
# The least value a broker takes (Kafka's atLeast validators); others take any number.
_LEAST = {
    "retention.ms": -1, "delete.retention.ms": 0, "file.delete.delay.ms": 0,
    "flush.messages": 1, "flush.ms": 0, "index.interval.bytes": 0, "max.message.bytes": 0,
    "max.compaction.lag.ms": 1, "min.compaction.lag.ms": 0, "min.insync.replicas": 1,
    "message.timestamp.after.max.ms": 0, "message.timestamp.before.max.ms": 0,
    "segment.bytes": 1048576, "segment.index.bytes": 4, "segment.jitter.ms": 0, "segment.ms": 1,
}  # fmt: skip
_CHOICES = {
    "cleanup.policy": {"delete", "compact"},
    "compression.type": {"uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"},
    "message.timestamp.type": {"CreateTime", "LogAppendTime"},
}
_ANY_TYPES = (ResourceType.ANY,)
_ANY_PATTERNS = (ResourcePatternType.ANY, ResourcePatternType.MATCH)


@dataclass
class Partition:
    start: int = 0
    end: int = 0
    timestamps: dict[int, int] = field(default_factory=dict)  # offset -> ms, where known
    records: dict[int, Record] = field(default_factory=dict)  # where written with content
    holes: set[int] = field(default_factory=set)  # no record: a marker, or compacted away

    def record(self, offset: int) -> Record | None:
        """The committed record at `offset`, if the log holds one there (one a test did not
        write with content has value b"record <offset>")."""
        if not self.start <= offset < self.end or offset in self.holes:
            return None
        return self.records.get(offset) or Record(
            offset, None, b"record %d" % offset, (), self.timestamps.get(offset, 0)
        )

    def append(self, key: bytes | None, value: bytes | None, headers: Headers, ts: int) -> None:
        self.records[self.end] = Record(self.end, key, value, tuple(headers), ts)
        self.end += 1


@dataclass
class Topic:
    name: str
    partitions: list[Partition]
    replication_factor: int
    configs: dict[str, str]  # set on the topic itself
    topic_id: str = field(default_factory=lambda: kafka_uuid(uuid.uuid4()))


@dataclass
class Group:
    members: list[GroupMember] = field(default_factory=list)
    offsets: GroupOffsets = field(default_factory=dict)

    @property
    def state(self) -> str:
        return "Stable" if self.members else "Empty"


class MemoryCluster:
    """One cluster, reached at `bootstrap`. `down` makes every call fail as an unreachable
    cluster does."""

    def __init__(self, bootstrap: str, brokers: int = 1, authorizer: bool = True):
        self.bootstrap = bootstrap
        self.cluster_id = kafka_uuid(uuid.uuid4())
        self.brokers = brokers
        self.authorizer = authorizer
        self.down = False
        self.topics: dict[str, Topic] = {}
        self.acls: list[AclBinding] = []
        self.groups: dict[str, Group] = {}
        self.broker_settings: dict[str, str] = {"auto.create.topics.enable": "false"}
        # The mirrors' offset translation as the engine stores it: {(topic id, partition): Runs}.
        self.translation: dict[tuple[str, int], Runs] = {}
        self.lock = threading.RLock()

    def acls_on(self, topic: str) -> set[tuple[str, str]]:
        """The (operation, permission) pairs granted to User:* on `topic`, as
        tests.kafka_clients.acls_on reads them from a broker."""
        with self.lock:
            return {
                (b.operation.name, b.permission_type.name)
                for b in self.acls
                if b.principal == "User:*"
                and b.restype == ResourceType.TOPIC
                and b.resource_pattern_type == ResourcePatternType.LITERAL
                and b.name == topic
            }

    # What a test does to a cluster (as a producer or a consumer would). ------------------

    def produce(self, topic: str, partition: int = 0, count: int = 1, at_ms: int = 0) -> None:
        """`count` more records at the end of the partition, stamped `at_ms` if given, else now
        (as a producer's clock stamps them)."""
        with self.lock:
            log = self.topics[topic].partitions[partition]
            for offset in range(log.end, log.end + count):
                log.timestamps[offset] = at_ms or int(time.time() * 1000)
            log.end += count

    def join(self, group: str, topic: str, partition: int = 0) -> None:
        """A consumer of `group` that is running, assigned that partition."""
        with self.lock:
            member = GroupMember(f"member-{uuid.uuid4().hex[:6]}", None, "tests", "/127.0.0.1", [])
            member.assignment.append((topic, partition))
            self.groups.setdefault(group, Group()).members.append(member)

    def commit(self, group: str, offsets: GroupOffsets) -> None:
        with self.lock:
            self.groups.setdefault(group, Group()).offsets.update(offsets)

    def compact(self, topic: str, partition: int, offsets: Iterable[int]) -> None:
        """The records at `offsets` removed, as compaction removes them (their offsets stay)."""
        with self.lock:
            self.topics[topic].partitions[partition].holes.update(offsets)

    def records(self, topic: str, partition: int = 0) -> list[Record]:
        """What a consumer of the partition reads, from its log start."""
        with self.lock:
            log = self.topics[topic].partitions[partition]
            return [r for o in range(log.start, log.end) if (r := log.record(o)) is not None]


_clusters: dict[str, MemoryCluster] = {}
_registry_lock = threading.Lock()


def add_cluster(bootstrap: str, **options) -> MemoryCluster:
    with _registry_lock:
        _clusters[bootstrap] = cluster = MemoryCluster(bootstrap, **options)
    return cluster


def cluster(bootstrap: str) -> MemoryCluster:
    """The in-memory cluster reached at `bootstrap`: what a test checks it holds."""
    with _registry_lock:
        return _clusters[bootstrap]


def clear() -> None:
    with _registry_lock:
        _clusters.clear()


def _config_refusal(configs: dict[str, str], deleted: Iterable[str] = ()) -> str:
    """Why a broker would refuse these topic configs, in its words ("" if it would not)."""
    for name, value in sorted(configs.items()):
        if name not in TOPIC_DEFAULTS:
            return f"Unknown topic config name: {name}"
        if name not in deleted:
            problem = _value_refusal(name, value.strip())
            if problem:
                return f"Invalid value {value} for configuration {name}: {problem}"
    return ""


def _value_refusal(name: str, value: str) -> str:
    kind = "LONG" if name in _LONGS else "INT" if name in _INTS else None
    if kind:
        bits = 63 if kind == "LONG" else 31
        if not re.fullmatch(r"-?\d{1,20}", value) or not -(2**bits) <= int(value) < 2**bits:
            return f"Not a number of type {kind}"
        if int(value) < _LEAST.get(name, -(2**bits)):
            return f"Value must be at least {_LEAST[name]}"
    if name == "min.cleanable.dirty.ratio" and not re.fullmatch(r"\d*\.?\d+", value):
        return "Not a number of type DOUBLE"
    if name in ("preallocate", "unclean.leader.election.enable") and value.lower() not in (
        "true",
        "false",
    ):
        return "Expected value to be either true or false"
    allowed = _CHOICES.get(name)
    chosen = {v.strip() for v in value.split(",")} if name == "cleanup.policy" else {value}
    if allowed and not chosen <= allowed:
        return f"String must be one of: {', '.join(sorted(allowed))}"
    return ""


def _matches(binding: AclBinding, f: AclBindingFilter) -> bool:
    return (
        (f.restype in _ANY_TYPES or f.restype == binding.restype)
        and (f.name is None or f.name == binding.name)
        and (
            f.resource_pattern_type in _ANY_PATTERNS
            or f.resource_pattern_type == binding.resource_pattern_type
        )
        and (f.principal is None or f.principal == binding.principal)
        and (f.host is None or f.host == binding.host)
        and (f.operation == AclOperation.ANY or f.operation == binding.operation)
        and (
            f.permission_type == AclPermissionType.ANY
            or f.permission_type == binding.permission_type
        )
    )


class MemoryAdmin(AdminCalls):
    """`infra.kafka_admin.KafkaAdmin`'s calls, answered from the cluster registered for the
    config's bootstrap.servers (none: unreachable, as a closed port is)."""

    def __init__(self, config: dict[str, str], timeout: float = 5.0):
        self.bootstrap = config.get("bootstrap.servers", "?")
        self.timeout = timeout
        self.failed = False

    def clear_client_errors(self) -> None:
        pass

    def reached(self, doing: str) -> MemoryCluster:
        """The cluster at this bootstrap address, or Unreachable as a closed port or a
        stopped cluster answers."""
        # a client resolves localhost (the tutorial's addresses) to the loopback address
        cluster = _clusters.get(self.bootstrap.replace("localhost:", "127.0.0.1:"))
        if cluster is None or cluster.down:
            self.failed = True
            words = (
                f"no broker answered within {self.timeout:g} s"
                if cluster
                else "nothing accepts connections at that address (connection refused)"
            )
            raise Unreachable(
                f"Could not {doing} at {self.bootstrap}: {words}. Check that the brokers are "
                "running and that bootstrap.servers is right."
            )
        return cluster

    def _topic(self, cluster: MemoryCluster, name: str, doing: str) -> Topic:
        found = cluster.topics.get(name)
        if found is None:
            raise TopicNotFound(f"Could not {doing}: no such topic.")
        return found

    # The cluster. ------------------------------------------------------------------------

    def describe_cluster(self) -> ClusterDescription:
        cluster = self.reached("describe the cluster")
        return ClusterDescription(cluster.cluster_id, cluster.brokers, 1)

    def broker_configs(self, names: list[str]) -> dict[str, str | None]:
        cluster = self.reached("describe the cluster")
        return {name: cluster.broker_settings.get(name) for name in names}

    def brokers(self) -> list[BrokerNode]:
        cluster = self.reached("describe the cluster")
        return [BrokerNode(n, "localhost", 9092 + n, None) for n in range(1, cluster.brokers + 1)]

    def broker_config_details(self, broker: int | None) -> list[ConfigDetail]:
        """The broker settings the cluster was given, each set on every broker statically."""
        cluster = self.reached("describe the cluster")
        if broker is None:  # none set for the whole cluster
            return []
        source = "STATIC_BROKER_CONFIG"
        return [
            ConfigDetail(name, value, source, False, True, False, [(name, value, source)])
            for name, value in sorted(cluster.broker_settings.items())
        ]

    # Topics. -----------------------------------------------------------------------------

    def topic_partition_counts(self) -> dict[str, int]:
        cluster = self.reached("list the topics")
        with cluster.lock:
            return {name: len(t.partitions) for name, t in cluster.topics.items()}

    def describe_topic(self, name: str) -> TopicInfo:
        cluster = self.reached(f"describe topic {name!r}")
        topic = self._topic(cluster, name, f"describe topic {name!r}")
        return TopicInfo(name, topic.topic_id, len(topic.partitions), topic.replication_factor)

    def describe_topics(self, names: Iterable[str]) -> dict[str, TopicInfo]:
        cluster = self.reached("describe topics")
        with cluster.lock:
            return {
                name: self.describe_topic(name)
                for name in sorted(set(names))
                if name in cluster.topics
            }

    def partition_counts(self, names: list[str]) -> dict[str, int]:
        return {name: self.describe_topic(name).partitions for name in names}

    def topic_details(self, names: Iterable[str]) -> dict[str, TopicDetail]:
        cluster = self.reached("describe topics")
        with cluster.lock:
            return {
                name: TopicDetail(name, name.startswith("__"), self._replicas(cluster, name, -1))
                for name in sorted(set(names))
                if name in cluster.topics
            }

    def partition_replicas(self, topic: str) -> list[PartitionReplicas]:
        cluster = self.reached(f"describe topic {topic!r}")
        self._topic(cluster, topic, f"describe topic {topic!r}")
        return self._replicas(cluster, topic, 0)

    def _replicas(self, cluster: MemoryCluster, name: str, epoch: int) -> list[PartitionReplicas]:
        topic = cluster.topics[name]
        replicas = [1 + (b % cluster.brokers) for b in range(topic.replication_factor)]
        return [
            PartitionReplicas(
                partition=p,
                leader=replicas[0],
                replicas=replicas,
                isr=replicas,
                log_start_offset=log.start if epoch >= 0 else -1,
                log_end_offset=log.end if epoch >= 0 else -1,
                leader_epoch=epoch if epoch >= 0 else None,
            )
            for p, log in enumerate(topic.partitions)
        ]

    def topics_configs(self, names: Iterable[str]) -> dict[str, dict[str, ConfigValue]]:
        cluster = self.reached("read topic configs")
        found = {}
        with cluster.lock:
            for name in sorted(set(names)):
                topic = self._topic(cluster, name, f"read the configs of topic {name!r}")
                found[name] = {
                    key: ConfigValue(topic.configs.get(key, default), key in topic.configs)
                    for key, default in TOPIC_DEFAULTS.items()
                }
        return found

    def topic_config_details(self, name: str) -> list[ConfigDetail]:
        configs = self.topic_configs(name)
        return [
            ConfigDetail(
                key,
                value.value,
                "DYNAMIC_TOPIC_CONFIG" if value.is_set else "DEFAULT_CONFIG",
                not value.is_set,
                False,
                False,
                [(key, value.value, "DYNAMIC_TOPIC_CONFIG")] if value.is_set else [],
            )
            for key, value in sorted(configs.items())
        ]

    def create_topics(
        self, topics: list[NewTopicSpec], validate_only: bool = False
    ) -> dict[str, KafkaAdminError]:
        cluster = self.reached("create topics")
        failed = {}
        with cluster.lock:
            for spec in topics:
                problem = self._refusal(cluster, spec)
                if problem:
                    failed[spec.name] = KafkaAdminError(
                        f"Could not create topic {spec.name!r} at {self.bootstrap}: {problem}."
                    )
                elif not validate_only:
                    cluster.topics[spec.name] = Topic(
                        spec.name,
                        [Partition() for _ in range(spec.partitions)],
                        spec.replication_factor or min(cluster.brokers, 3),
                        dict(spec.configs),
                    )
        return failed

    @staticmethod
    def _refusal(cluster: MemoryCluster, spec: NewTopicSpec) -> str:
        if spec.name in cluster.topics:
            return f"Topic '{spec.name}' already exists"
        if spec.partitions < 1:
            return "Number of partitions must be larger than 0"
        if (spec.replication_factor or 1) > cluster.brokers:
            return (
                f"Unable to replicate the partition {spec.replication_factor} time(s): The "
                f"target replication factor of {spec.replication_factor} cannot be reached "
                f"because only {cluster.brokers} broker(s) are registered"
            )
        return _config_refusal(spec.configs)

    def delete_topics(self, names: Iterable[str]) -> None:
        cluster = self.reached("delete topics")
        with cluster.lock:
            for name in set(names):
                cluster.topics.pop(name, None)

    def delete_topic(self, name: str) -> None:
        cluster = self.reached(f"delete topic {name!r}")
        with cluster.lock:
            self._topic(cluster, name, f"delete topic {name!r}")
            del cluster.topics[name]

    def delete_records(self, topic: str, before: dict[int, int]) -> None:
        cluster = self.reached(f"delete the oldest records of {topic!r}")
        with cluster.lock:
            logs = self._topic(cluster, topic, f"delete the oldest records of {topic!r}").partitions
            for p, offset in before.items():
                logs[p].start = max(logs[p].start, min(offset, logs[p].end))

    def create_partitions(self, name: str, total: int) -> None:
        doing = f"grow topic {name!r} to {total} partitions"
        cluster = self.reached(doing)
        with cluster.lock:
            topic = self._topic(cluster, name, doing)
            if total <= len(topic.partitions):
                raise KafkaAdminError(
                    f"Could not {doing} at {self.bootstrap}: Topic currently has "
                    f"{len(topic.partitions)} partitions, which is higher than the requested "
                    f"{total}."
                )
            topic.partitions += [Partition() for _ in range(total - len(topic.partitions))]

    def alter_topic_configs(self, name: str, to_set: dict[str, str], to_delete: list[str]) -> None:
        doing = f"change the configs of topic {name!r}"
        cluster = self.reached(doing)
        with cluster.lock:
            topic = self._topic(cluster, name, doing)
            problem = _config_refusal({**to_set, **dict.fromkeys(to_delete, "")}, to_delete)
            if problem:
                raise KafkaAdminError(f"Could not {doing} at {self.bootstrap}: {problem}.")
            topic.configs.update(to_set)
            for key in to_delete:
                topic.configs.pop(key, None)

    # ACLs. -------------------------------------------------------------------------------

    def _acls(self, doing: str) -> MemoryCluster:
        cluster = self.reached(doing)
        if not cluster.authorizer:
            raise AuthorizerDisabled(f"Could not {doing}: the cluster has no authorizer.")
        return cluster

    def create_acls(self, bindings: list[AclBinding]) -> None:
        cluster = self._acls("create ACLs")
        with cluster.lock:
            cluster.acls += [b for b in bindings if b not in cluster.acls]

    def delete_acls(self, filters: list[AclBindingFilter]) -> None:
        cluster = self._acls("delete ACLs")
        with cluster.lock:
            cluster.acls = [b for b in cluster.acls if not any(_matches(b, f) for f in filters)]

    def describe_acls(self, acl_filter: AclBindingFilter) -> list[AclBinding]:
        cluster = self._acls("read the ACLs")
        with cluster.lock:
            return [b for b in cluster.acls if _matches(b, acl_filter)]

    def authorizer_enabled(self) -> bool:
        return self.reached("read the ACLs").authorizer

    # Offsets. ----------------------------------------------------------------------------

    def offsets(
        self, partitions: Iterable[tuple[str, int]], at: str | int = "latest"
    ) -> dict[tuple[str, int], int]:
        cluster = self.reached("read offsets")
        found = {}
        with cluster.lock:
            for topic, p in partitions:
                doing = f"read the offsets of topic {topic!r}"
                logs = self._topic(cluster, topic, doing).partitions
                if p >= len(logs):
                    raise KafkaAdminError(f"Could not {doing}: Broker: Unknown topic or partition")
                found[topic, p] = self._offset(logs[p], at)
        return found

    @staticmethod
    def _offset(log: Partition, at: str | int) -> int:
        if at == "latest":
            return log.end
        if at == "earliest":
            return log.start
        later = [o for o, ms in sorted(log.timestamps.items()) if o >= log.start and ms >= int(at)]
        return later[0] if later else -1

    def readable_offsets(
        self, partitions: Iterable[tuple[str, int]], at: str = "latest"
    ) -> tuple[dict[tuple[str, int], int], dict[tuple[str, int], str]]:
        return self.offsets(partitions, at), {}

    # Consumer groups. --------------------------------------------------------------------

    def list_group_ids(self) -> set[str]:
        cluster = self.reached("list the consumer groups")
        with cluster.lock:
            return set(cluster.groups)

    def group_details(self, group_ids: Iterable[str]) -> dict[str, GroupDetail]:
        cluster = self.reached("describe consumer groups")
        found = {}
        with cluster.lock:
            for group_id in sorted(set(group_ids)):
                group = cluster.groups.get(group_id)
                state = group.state if group else "Dead"
                members = list(group.members) if group else []
                found[group_id] = GroupDetail(
                    group_id, not members, state, "range" if members else "", 1, members
                )
        return found

    def group_offsets(self, group_ids: Iterable[str]) -> dict[str, GroupOffsets]:
        cluster = self.reached("read consumer group offsets")
        with cluster.lock:
            return {
                g: dict(cluster.groups[g].offsets) if g in cluster.groups else {}
                for g in sorted(set(group_ids))
            }

    def alter_group_offsets(self, offsets: dict[str, GroupOffsets]) -> dict[str, str | None]:
        cluster = self.reached("commit consumer group offsets")
        outcome: dict[str, str | None] = {}
        with cluster.lock:
            for group_id, committed in sorted(offsets.items()):
                group = cluster.groups.setdefault(group_id, Group())
                if group.members:
                    outcome[group_id] = "it has active members on the destination"
                    continue
                group.offsets.update(committed)
                outcome[group_id] = None
        return outcome

    def delete_groups(self, group_ids: list[str], attempts: int = 10) -> None:
        cluster = self.reached("delete consumer groups")
        with cluster.lock:
            for group_id in group_ids:
                group = cluster.groups.get(group_id)
                if group and group.members:
                    raise KafkaAdminError(
                        f"Could not delete consumer group {group_id!r} at {self.bootstrap}: "
                        "Broker: The group is not empty."
                    )
                cluster.groups.pop(group_id, None)


class MemoryTranslationReader:
    """`spark_jobs.translation.Reader`'s calls, answered from the cluster's stored runs."""

    def __init__(self, config: dict[str, str]):
        self.admin = MemoryAdmin(config)

    def runs(self, topic_ids: set[str]) -> dict[tuple[str, int], Runs]:
        cluster = self.admin.reached("read the offset translation")
        with cluster.lock:
            return {
                key: Runs(list(runs.entries))
                for key, runs in cluster.translation.items()
                if key[0] in topic_ids
            }

    def close(self) -> None:
        pass


@dataclass(frozen=True)
class _Message:
    """A record as confluent-kafka's consumer hands it over (the calls the callers make)."""

    at: Record
    in_partition: int

    def partition(self) -> int:
        return self.in_partition

    def offset(self) -> int:
        return self.at.offset

    def key(self) -> bytes | None:
        return self.at.key

    def value(self) -> bytes | None:
        return self.at.value

    def headers(self) -> list[tuple[str, bytes | None]] | None:
        return list(self.at.headers) or None

    def timestamp(self) -> tuple[int, int]:
        return 1, self.at.timestamp  # TIMESTAMP_CREATE_TIME


class MemoryRecords:
    """`infra.kafka_copy.Records`'s calls on the cluster the config reaches, record by record
    as the real ones copy and read them (committed records only; a copy from below the log
    start starts at it)."""

    def __init__(self, config: dict[str, str]):
        self.admin = MemoryAdmin(config)

    def _log(self, cluster: MemoryCluster, topic: str, partition: int, doing: str) -> Partition:
        return self.admin._topic(cluster, topic, doing).partitions[partition]

    def copy_range(
        self,
        topic: str,
        partition: int,
        start: int,
        end: int,
        target: str,
        more_headers: Callable[[int, int], Headers] = lambda offset, timestamp: [],
        progress: Callable[[], None] = lambda: None,
    ) -> tuple[int, int]:
        doing = f"copy records of {topic!r} into {target!r}"
        cluster = self.admin.reached(doing)
        records = size = 0
        with cluster.lock:
            source = self._log(cluster, topic, partition, doing)
            into = self._log(cluster, target, partition, doing)
            for offset in range(max(start, source.start), min(end, source.end)):
                record = source.record(offset)
                if record is None:
                    continue
                progress()
                headers = [*record.headers, *more_headers(offset, record.timestamp)]
                into.append(record.key, record.value, headers, record.timestamp)
                records += 1
                size += len(record.key or b"") + len(record.value or b"")
        return records, size

    def placeholders(
        self, topic: str, partition: int, count: int, progress: Callable[[], None] = lambda: None
    ) -> None:
        cluster = self.admin.reached(f"write placeholders into {topic!r}")
        with cluster.lock:
            log = self._log(cluster, topic, partition, f"write placeholders into {topic!r}")
            for _ in range(max(count, 0)):
                log.append(b"", None, [], 0)

    def holds_records(self, topic: str, partition: int, start: int, end: int) -> bool:
        cluster = self.admin.reached(f"read {topic!r}")
        with cluster.lock:
            log = self._log(cluster, topic, partition, f"read {topic!r}")
            return any(log.record(o) is not None for o in range(start, end))

    def first_timestamps(
        self, positions: dict[tuple[str, int], int], timeout_s: float = 5
    ) -> dict[tuple[str, int], int | None]:
        cluster = self.admin.reached("read the oldest records not yet mirrored")
        found: dict[tuple[str, int], int | None] = {}
        with cluster.lock:
            for (topic, partition), offset in positions.items():
                log = self._log(cluster, topic, partition, f"read {topic!r}")
                first = (log.record(o) for o in range(max(offset, log.start), log.end))
                record = next((r for r in first if r is not None), None)
                found[topic, partition] = None if record is None else record.timestamp
        return found

    def read_head(
        self, topic: str, partitions: int, limit: int, max_bytes: int | None = None
    ) -> list[_Message]:
        cluster = self.admin.reached(f"read {topic!r}")
        with cluster.lock:
            logs = self.admin._topic(cluster, topic, f"read {topic!r}").partitions[:partitions]
            found = [
                _Message(record, p)
                for p, log in enumerate(logs)
                for o in range(log.start, log.end)
                if (record := log.record(o)) is not None
            ]
        kept, held = [], 0
        for msg in found[:limit]:
            if max_bytes is not None and held >= max_bytes:
                break
            kept.append(msg)
            held += record_size(msg)
        return kept
