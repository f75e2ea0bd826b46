"""Kafka REST v3's broker reads of a registered cluster, in Confluent's shapes, so that
`confluent kafka broker list / describe` and `confluent kafka cluster configuration list` work
against Isthmus: the brokers from the cluster's metadata (describe_cluster), their configs and
the cluster-wide ones (describe_configs), with the cluster's registered connection, never
written to. A cluster that does not answer is said in words (`replication.kafka.inspection`).

Partition reassignments are not served: confluent-kafka (librdkafka) has no
ListPartitionReassignments, so their route says so instead of answering a list that could be
wrong (Confluent's cluster and topic models require the relationship, so it stays in them)."""

from __future__ import annotations

import re

from console.api.base import ApiError, api_url, cluster, endpoint, self_url
from console.api.cluster_reads import base, listed, the_one
from console.api.schemas import (
    ConfigSynonym,
    KafkaBroker,
    KafkaBrokerConfig,
    KafkaBrokerConfigList,
    KafkaBrokerList,
    KafkaClusterConfig,
    KafkaClusterConfigList,
    Relationship,
    respond,
)
from infra.kafka_brokers import BrokerNode
from infra.kafka_topics import ConfigDetail
from replication.kafka import inspection
from replication.models import KafkaCluster


def _broker_id(text: str) -> int:
    # ASCII digits only: str.isdigit() takes "²", which int() refuses.
    if not re.fullmatch(r"[0-9]{1,10}", text) or int(text) > 2**31 - 1:
        raise ApiError(
            400,
            f"A broker id is a whole number, like 1, not {text[:40]!r}: list the brokers "
            "at brokers to see their ids.",
        )
    return int(text)


def _broker(request, found: KafkaCluster, node: BrokerNode) -> KafkaBroker:
    path = f"{base(found)}/brokers/{node.broker_id}"
    return KafkaBroker(
        metadata=self_url(request, path),
        cluster_id=found.cluster_id,
        broker_id=node.broker_id,
        host=node.host,
        port=node.port,
        rack=node.rack,
        configs=Relationship(related=api_url(request, f"{path}/configs")),
        partition_replicas=Relationship(related=api_url(request, f"{path}/partition-replicas")),
    )


def _fields(c: ConfigDetail) -> dict:
    """What a broker config and a cluster config share; a sensitive value (a password, a
    keystore's) is never sent, in the config or its synonyms."""
    return {
        "name": c.name,
        "value": None if c.is_sensitive else c.value,
        "is_default": c.is_default,
        "is_read_only": c.is_read_only,
        "is_sensitive": c.is_sensitive,
        "source": c.source,
        "synonyms": [
            ConfigSynonym(name=n, value=None if c.is_sensitive else v, source=s)
            for n, v, s in c.synonyms
        ],
    }


@endpoint(GET="console.view")
def brokers(request, cluster_id):
    found = cluster(cluster_id)
    return listed(
        request, KafkaBrokerList, [_broker(request, found, b) for b in inspection.brokers(found)]
    )


@endpoint(GET="console.view")
def broker(request, cluster_id, broker_id):
    found = cluster(cluster_id)
    return respond(_broker(request, found, inspection.broker(found, _broker_id(broker_id))))


def _broker_config(request, found: KafkaCluster, broker_id: int, c) -> KafkaBrokerConfig:
    path = f"{base(found)}/brokers/{broker_id}/configs/{c.name}"
    return KafkaBrokerConfig(
        metadata=self_url(request, path),
        cluster_id=found.cluster_id,
        broker_id=broker_id,
        **_fields(c),
    )


@endpoint(GET="broker_configs.view")
def broker_configs(request, cluster_id, broker_id):
    found, number = cluster(cluster_id), _broker_id(broker_id)
    return listed(
        request,
        KafkaBrokerConfigList,
        [
            _broker_config(request, found, number, c)
            for c in inspection.broker_configs(found, number)
        ],
    )


@endpoint(GET="broker_configs.view")
def broker_config(request, cluster_id, broker_id, broker_config_name):
    found, number = cluster(cluster_id), _broker_id(broker_id)
    chosen = the_one(
        [c for c in inspection.broker_configs(found, number) if c.name == broker_config_name],
        f"Broker {number} has no config {broker_config_name[:100]!r}.",
    )
    return respond(_broker_config(request, found, number, chosen))


@endpoint(GET="broker_configs.view")
def cluster_configs(request, cluster_id):
    found = cluster(cluster_id)
    return respond(
        KafkaClusterConfigList(
            metadata=self_url(request, request.path),
            data=[
                KafkaClusterConfig(
                    metadata=self_url(request, f"{base(found)}/broker-configs/{c.name}"),
                    cluster_id=found.cluster_id,
                    **_fields(c),
                )
                for c in inspection.broker_configs(found, None)
            ],
        )
    )


@endpoint(GET="console.view")
def reassignments(request, cluster_id, topic_name, partition_id):
    cluster(cluster_id)  # an unknown cluster is a 404 first
    raise ApiError(
        404,
        "Isthmus cannot list partition reassignments: its Kafka client (confluent-kafka, "
        "librdkafka) has no ListPartitionReassignments call. Use Kafka's own "
        "kafka-reassign-partitions --list (or kafka-topics --describe) against the cluster.",
    )
