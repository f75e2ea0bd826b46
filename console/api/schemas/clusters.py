"""The answers about a registered cluster and what it holds: the clusters themselves, and
Kafka REST v3's read paths (topics, partitions, replicas, topic configs, consumer groups,
their consumers and lag, ACLs).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from console.api.schemas.common import (
    Relationship,
    ResourceCollectionMetadata,
    ResourceMetadata,
    Shape,
    Url,
)


class ClusterRelated(Shape):
    """Related resources."""

    related: Url = Field(description="The cluster's links (as a URL).")


class KafkaCluster(Shape):
    """A registered cluster. The relationships Confluent's model requires point where Kafka
    REST serves them, and Isthmus serves each but `partition_reassignments`: its route answers
    404 saying why (confluent-kafka cannot list reassignments)."""

    kind: Literal["KafkaCluster"] = "KafkaCluster"
    metadata: ResourceMetadata
    cluster_id: str = Field(description="The Kafka cluster id.")
    name: str = Field(description="*Isthmus*: the name the cluster was registered under.")
    links: ClusterRelated
    acls: Relationship
    brokers: Relationship
    broker_configs: Relationship
    consumer_groups: Relationship
    topics: Relationship
    partition_reassignments: Relationship


class KafkaClusterList(Shape):
    """The registered clusters."""

    kind: Literal["KafkaClusterList"] = "KafkaClusterList"
    metadata: ResourceCollectionMetadata
    data: list[KafkaCluster]


class KafkaTopic(Shape):
    """A topic of the cluster (Kafka REST's TopicData)."""

    kind: Literal["KafkaTopic"] = "KafkaTopic"
    metadata: ResourceMetadata
    cluster_id: str
    topic_name: str
    is_internal: bool
    replication_factor: int
    partitions_count: int
    partitions: Relationship
    configs: Relationship
    partition_reassignments: Relationship
    is_mirror: bool = Field(description="*Isthmus*: a mirror topic of one of its links.")


class KafkaTopicList(Shape):
    kind: Literal["KafkaTopicList"] = "KafkaTopicList"
    metadata: ResourceCollectionMetadata
    data: list[KafkaTopic]


class KafkaPartition(Shape):
    """A partition of a topic (Kafka REST's PartitionData)."""

    kind: Literal["KafkaPartition"] = "KafkaPartition"
    metadata: ResourceMetadata
    cluster_id: str
    topic_name: str
    partition_id: int
    leader: Relationship = Field(description="Its leader's replica (its replicas, without one).")
    replicas: Relationship
    reassignment: Relationship
    leader_id: int | None = Field(description="*Isthmus*: the leader's broker id.")
    replica_ids: list[int] = Field(description="*Isthmus*: the replicas' broker ids.")
    isr_ids: list[int] = Field(description="*Isthmus*: the in-sync replicas' broker ids.")


class KafkaPartitionList(Shape):
    kind: Literal["KafkaPartitionList"] = "KafkaPartitionList"
    metadata: ResourceCollectionMetadata
    data: list[KafkaPartition]


class KafkaReplica(Shape):
    """A replica of a partition (Kafka REST's ReplicaData): what `topic describe` prints."""

    kind: Literal["KafkaReplica"] = "KafkaReplica"
    metadata: ResourceMetadata
    cluster_id: str
    topic_name: str
    partition_id: int
    broker_id: int
    is_leader: bool
    is_in_sync: bool
    broker: Relationship


class KafkaReplicaList(Shape):
    kind: Literal["KafkaReplicaList"] = "KafkaReplicaList"
    metadata: ResourceCollectionMetadata
    data: list[KafkaReplica]


class ConfigSynonym(Shape):
    name: str
    value: str | None
    source: str


class KafkaTopicConfig(Shape):
    """A config of a topic, set or not (Kafka REST's TopicConfigData)."""

    kind: Literal["KafkaTopicConfig"] = "KafkaTopicConfig"
    metadata: ResourceMetadata
    cluster_id: str
    topic_name: str
    name: str
    value: str | None = Field(description="null for a sensitive config.")
    is_default: bool
    is_read_only: bool
    is_sensitive: bool
    source: str
    synonyms: list[ConfigSynonym]


class KafkaTopicConfigList(Shape):
    kind: Literal["KafkaTopicConfigList"] = "KafkaTopicConfigList"
    metadata: ResourceCollectionMetadata
    data: list[KafkaTopicConfig]


class KafkaConsumerGroup(Shape):
    """A consumer group (Kafka REST's ConsumerGroupData)."""

    kind: Literal["KafkaConsumerGroup"] = "KafkaConsumerGroup"
    metadata: ResourceMetadata
    cluster_id: str
    consumer_group_id: str
    is_simple: bool
    partition_assignor: str
    state: str
    coordinator: Relationship
    consumer: Relationship = Field(description="Its consumers (the SDKs' name for it).")
    consumers: Relationship = Field(description="Its consumers (Kafka REST's name for it).")
    lag_summary: Relationship


class KafkaConsumerGroupList(Shape):
    kind: Literal["KafkaConsumerGroupList"] = "KafkaConsumerGroupList"
    metadata: ResourceCollectionMetadata
    data: list[KafkaConsumerGroup]


class KafkaConsumer(Shape):
    """A member of a consumer group (Kafka REST's ConsumerData)."""

    kind: Literal["KafkaConsumer"] = "KafkaConsumer"
    metadata: ResourceMetadata
    cluster_id: str
    consumer_group_id: str
    consumer_id: str
    instance_id: str | None
    client_id: str
    assignments: Relationship


class KafkaConsumerList(Shape):
    kind: Literal["KafkaConsumerList"] = "KafkaConsumerList"
    metadata: ResourceCollectionMetadata
    data: list[KafkaConsumer]


class KafkaConsumerLag(Shape):
    """A group's lag on one partition (Kafka REST's ConsumerLagData)."""

    kind: Literal["KafkaConsumerLag"] = "KafkaConsumerLag"
    metadata: ResourceMetadata
    cluster_id: str
    consumer_group_id: str
    topic_name: str
    partition_id: int
    current_offset: int
    log_end_offset: int
    lag: int
    consumer_id: str
    instance_id: str | None
    client_id: str


class KafkaConsumerLagList(Shape):
    kind: Literal["KafkaConsumerLagList"] = "KafkaConsumerLagList"
    metadata: ResourceCollectionMetadata
    data: list[KafkaConsumerLag]


class KafkaConsumerGroupLagSummary(Shape):
    """A group's largest and total lag (Kafka REST's ConsumerGroupLagSummaryData)."""

    kind: Literal["KafkaConsumerGroupLagSummary"] = "KafkaConsumerGroupLagSummary"
    metadata: ResourceMetadata
    cluster_id: str
    consumer_group_id: str
    max_lag_consumer_id: str
    max_lag_instance_id: str | None
    max_lag_client_id: str
    max_lag_topic_name: str
    max_lag_partition_id: int
    max_lag: int
    total_lag: int
    max_lag_consumer: Relationship
    max_lag_partition: Relationship


class KafkaAcl(Shape):
    """One ACL (Kafka REST's AclData)."""

    kind: Literal["KafkaAcl"] = "KafkaAcl"
    metadata: ResourceMetadata
    cluster_id: str
    resource_type: str
    resource_name: str
    pattern_type: str
    principal: str
    host: str
    operation: str
    permission: str


class KafkaAclList(Shape):
    kind: Literal["KafkaAclList"] = "KafkaAclList"
    metadata: ResourceCollectionMetadata
    data: list[KafkaAcl]
