"""Reading a registered cluster's brokers, topics, consumer groups and ACLs, as Kafka REST v3's read
paths serve them (so Confluent's tools can inspect mirror topics): with the cluster's own
registered connection, never written to. A cluster that does not answer is said in words."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    ResourcePatternType,
    ResourceType,
)

from infra.kafka_admin import KafkaAdmin
from infra.kafka_brokers import BrokerNode
from infra.kafka_errors import AuthorizerDisabled, KafkaAdminError, TopicNotFound
from infra.kafka_groups import GroupDetail
from infra.kafka_topics import ConfigDetail, TopicDetail
from replication.core.errors import ReplicationError, not_found
from replication.kafka.connections import cluster_admin, unreachable
from replication.models import KafkaCluster


@dataclass(frozen=True)
class PartitionLag:
    """How far a group is behind on one partition it committed an offset for."""

    topic: str
    partition: int
    current_offset: int
    log_end_offset: int
    consumer_id: str  # "" when no member has the partition
    instance_id: str | None
    client_id: str

    @property
    def lag(self) -> int:
        return max(0, self.log_end_offset - self.current_offset)


def _reading(cluster: KafkaCluster, read):
    try:
        return read(cluster_admin(cluster))
    except TopicNotFound:
        raise
    except KafkaAdminError as exc:
        raise unreachable(cluster.name, exc) from exc


def topics(cluster: KafkaCluster) -> list[TopicDetail]:
    def read(admin: KafkaAdmin) -> list[TopicDetail]:
        found = admin.topic_details(admin.list_topic_names())
        return [found[name] for name in sorted(found)]

    return _reading(cluster, read)


def topic(cluster: KafkaCluster, name: str) -> TopicDetail:
    found = _reading(cluster, lambda admin: admin.topic_details([name]))
    if name not in found:
        raise not_found(f"Topic {name!r} does not exist on cluster {cluster.name}.")
    return found[name]


def topic_configs(cluster: KafkaCluster, name: str) -> list[ConfigDetail]:
    try:
        return _reading(cluster, lambda admin: admin.topic_config_details(name))
    except TopicNotFound as exc:
        raise not_found(f"Topic {name!r} does not exist on cluster {cluster.name}.") from exc


def brokers(cluster: KafkaCluster) -> list[BrokerNode]:
    return _reading(cluster, lambda admin: admin.brokers())


def broker(cluster: KafkaCluster, broker_id: int) -> BrokerNode:
    for found in brokers(cluster):
        if found.broker_id == broker_id:
            return found
    raise not_found(f"Broker {broker_id} is not a broker of cluster {cluster.name}.")


def broker_configs(cluster: KafkaCluster, broker_id: int | None) -> list[ConfigDetail]:
    """Every config of one broker, or with None the cluster-wide dynamic broker defaults."""
    if broker_id is None:
        return _reading(cluster, lambda admin: admin.broker_config_details(None))
    broker(cluster, broker_id)  # a broker the cluster does not have is a 404, said in words
    return _reading(cluster, lambda admin: admin.broker_config_details(broker_id))


def groups(cluster: KafkaCluster) -> list[GroupDetail]:
    def read(admin: KafkaAdmin) -> list[GroupDetail]:
        found = admin.group_details(admin.list_group_ids())
        return [found[g] for g in sorted(found)]

    return _reading(cluster, read)


def group(cluster: KafkaCluster, group_id: str) -> GroupDetail:
    # Its coordinator says Dead for a group it does not know: one request, not a list of all.
    found = _reading(cluster, lambda admin: admin.group_details([group_id])[group_id])
    if found.state == "Dead":
        raise not_found(f"Consumer group {group_id!r} does not exist on cluster {cluster.name}.")
    return found


def group_lags(cluster: KafkaCluster, group_id: str) -> list[PartitionLag]:
    """Per partition the group committed an offset for: that offset, the partition's end and
    the member that has it, if one does."""
    detail = group(cluster, group_id)

    def read(admin: KafkaAdmin) -> list[PartitionLag]:
        committed = admin.group_offsets([group_id])[group_id]
        ends = admin.offsets(committed) if committed else {}
        owner = {tp: m for m in detail.members for tp in m.assignment}
        lags = []
        for (topic_name, partition), offset in sorted(committed.items()):
            member = owner.get((topic_name, partition))
            lags.append(
                PartitionLag(
                    topic_name,
                    partition,
                    offset,
                    ends.get((topic_name, partition), offset),
                    member.member_id if member else "",
                    member.instance_id if member else None,
                    member.client_id if member else "",
                )
            )
        return lags

    return _reading(cluster, read)


# Kafka REST's ACL filter parameters: name -> (enum, its ANY).
ACL_PARAMETERS = {
    "resource_type": (ResourceType, ResourceType.ANY),
    "pattern_type": (ResourcePatternType, ResourcePatternType.ANY),
    "operation": (AclOperation, AclOperation.ANY),
    "permission": (AclPermissionType, AclPermissionType.ANY),
}


# librdkafka calls the cluster resource BROKER; Kafka, its REST API and Confluent's tools CLUSTER.
_KAFKA_NAMES = {"BROKER": "CLUSTER"}
_OURS = {kafka: ours for ours, kafka in _KAFKA_NAMES.items()}


def kafka_name(value) -> str:
    """An ACL enum's name as Kafka REST says it."""
    return _KAFKA_NAMES.get(value.name, value.name)


def choices(kind) -> list[str]:
    """The names a filter parameter takes, as Kafka REST says them."""
    return [_KAFKA_NAMES.get(m, m) for m in kind.__members__ if m != "UNKNOWN"]


def acls(cluster: KafkaCluster, query: dict[str, str]) -> list[AclBinding]:
    """The ACLs matching Kafka REST's filter parameters (`resource_type`, `resource_name`,
    `pattern_type`, `principal`, `host`, `operation`, `permission`; each absent one matches
    all). A cluster without an authorizer has none."""
    chosen: dict[str, Any] = {}  # each parameter's enum member
    for name, (kind, anything) in ACL_PARAMETERS.items():
        value = query.get(name, "").strip().upper().replace("-", "_")
        if not value:
            chosen[name] = anything
            continue
        if value not in choices(kind):
            raise ReplicationError(f"{name} {value!r} is not one of {', '.join(choices(kind))}.")
        chosen[name] = kind[_OURS.get(value, value)]
    # confluent-kafka's stubs want text for the name, principal and host; None matches any.
    acl_filter = AclBindingFilter(
        chosen["resource_type"],
        query.get("resource_name") or None,  # type: ignore[arg-type]
        chosen["pattern_type"],
        query.get("principal") or None,  # type: ignore[arg-type]
        query.get("host") or None,  # type: ignore[arg-type]
        chosen["operation"],
        chosen["permission"],
    )

    def read(admin: KafkaAdmin) -> list[AclBinding]:
        try:
            return admin.describe_acls(acl_filter)
        except AuthorizerDisabled:
            return []

    found = _reading(cluster, read)
    return sorted(
        found,
        key=lambda b: (b.restype.name, b.name, b.principal, b.host, b.operation.name),
    )
