"""Kafka REST v3's broker reads: a cluster's brokers (BrokerData), one broker's configs
(BrokerConfigData) and the cluster-wide broker configs (ClusterConfigData), as
`confluent kafka broker list / describe` and `confluent kafka cluster configuration list` read
them. A sensitive config's value is never sent: null, as Confluent's own answer has it."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from console.api.schemas.clusters import ConfigSynonym
from console.api.schemas.common import (
    Relationship,
    ResourceCollectionMetadata,
    ResourceMetadata,
    Shape,
)


class KafkaBroker(Shape):
    """A broker of the cluster, as the cluster's metadata names it (Kafka REST's BrokerData)."""

    kind: Literal["KafkaBroker"] = "KafkaBroker"
    metadata: ResourceMetadata
    cluster_id: str
    broker_id: int
    host: str | None
    port: int | None
    rack: str | None = Field(description="null when the broker has no broker.rack.")
    configs: Relationship
    partition_replicas: Relationship = Field(
        description="Where Kafka REST lists the broker's replicas; Isthmus does not serve it "
        "(a topic's partitions/{id}/replicas does)."
    )


class KafkaBrokerList(Shape):
    kind: Literal["KafkaBrokerList"] = "KafkaBrokerList"
    metadata: ResourceCollectionMetadata
    data: list[KafkaBroker]


class _Config(Shape):
    metadata: ResourceMetadata
    cluster_id: str
    name: str
    value: str | None = Field(description="null for a sensitive config.")
    is_default: bool
    is_read_only: bool
    is_sensitive: bool
    source: str = Field(description="Kafka's name of where the value comes from.")
    synonyms: list[ConfigSynonym]


class KafkaBrokerConfig(_Config):
    """A config of one broker, set or not (Kafka REST's BrokerConfigData)."""

    kind: Literal["KafkaBrokerConfig"] = "KafkaBrokerConfig"
    broker_id: int


class KafkaBrokerConfigList(Shape):
    kind: Literal["KafkaBrokerConfigList"] = "KafkaBrokerConfigList"
    metadata: ResourceCollectionMetadata
    data: list[KafkaBrokerConfig]


class KafkaClusterConfig(_Config):
    """A broker config set for the whole cluster (DYNAMIC_DEFAULT_BROKER_CONFIG: Kafka REST's
    ClusterConfigData)."""

    kind: Literal["KafkaClusterConfig"] = "KafkaClusterConfig"
    config_type: Literal["BROKER"] = "BROKER"


class KafkaClusterConfigList(Shape):
    kind: Literal["KafkaClusterConfigList"] = "KafkaClusterConfigList"
    metadata: ResourceCollectionMetadata
    data: list[KafkaClusterConfig]
