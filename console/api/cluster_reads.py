"""Kafka REST v3's read paths of a registered cluster's topics (with partitions and configs),
consumer groups (with consumers and lag) and ACLs, in Confluent's shapes, so that Confluent's
tools (`confluent kafka topic list --url …`) inspect mirror topics through Isthmus. Reads only,
with the cluster's registered connection (`replication.kafka.inspection`)."""

from __future__ import annotations

from console.api.base import api_url, cluster, endpoint, self_url
from console.api.schemas import (
    ConfigSynonym,
    KafkaAcl,
    KafkaAclList,
    KafkaConsumer,
    KafkaConsumerGroup,
    KafkaConsumerGroupLagSummary,
    KafkaConsumerGroupList,
    KafkaConsumerLag,
    KafkaConsumerLagList,
    KafkaConsumerList,
    KafkaPartition,
    KafkaPartitionList,
    KafkaReplica,
    KafkaReplicaList,
    KafkaTopic,
    KafkaTopicConfig,
    KafkaTopicConfigList,
    KafkaTopicList,
    Relationship,
    respond,
)
from replication.core.errors import not_found
from replication.kafka import inspection
from replication.models import MirrorTopic


def base(found) -> str:
    return f"/kafka/v3/clusters/{found.cluster_id}"


def listed(request, shape, data: list):
    """A Kafka REST list answer of `shape`, at the request's own path."""
    return respond(shape(metadata=self_url(request, request.path), data=data))


def the_one(found: list, missing: str):
    """The one item a path names, or a 404 that says `missing`."""
    if not found:
        raise not_found(missing)
    return found[0]


def _related(request, path: str) -> Relationship:
    return Relationship(related=api_url(request, path))


def _topic(request, found, detail, mirrors: set[str]) -> KafkaTopic:
    path = f"{base(found)}/topics/{detail.name}"
    replicas = len(detail.partitions[0].replicas) if detail.partitions else 0
    return KafkaTopic(
        metadata=self_url(request, path),
        cluster_id=found.cluster_id,
        topic_name=detail.name,
        is_internal=detail.is_internal,
        replication_factor=replicas,
        partitions_count=len(detail.partitions),
        partitions=_related(request, f"{path}/partitions"),
        configs=_related(request, f"{path}/configs"),
        partition_reassignments=_related(request, f"{path}/partitions/-/reassignment"),
        is_mirror=detail.name in mirrors,
    )


def _mirrors(found) -> set[str]:
    return set(MirrorTopic.objects.filter(destination=found).values_list("mirror_topic", flat=True))


@endpoint(GET="console.view")
def topics(request, cluster_id):
    found = cluster(cluster_id)
    mirrors = _mirrors(found)
    return listed(
        request,
        KafkaTopicList,
        [_topic(request, found, t, mirrors) for t in inspection.topics(found)],
    )


@endpoint(GET="console.view")
def topic(request, cluster_id, topic_name):
    found = cluster(cluster_id)
    return respond(_topic(request, found, inspection.topic(found, topic_name), _mirrors(found)))


def _partition(request, found, topic_name: str, p) -> KafkaPartition:
    path = f"{base(found)}/topics/{topic_name}/partitions/{p.partition}"
    return KafkaPartition(
        metadata=self_url(request, path),
        cluster_id=found.cluster_id,
        topic_name=topic_name,
        partition_id=p.partition,
        leader=_related(
            request, f"{path}/replicas" + (f"/{p.leader}" if p.leader is not None else "")
        ),
        replicas=_related(request, f"{path}/replicas"),
        reassignment=_related(request, f"{path}/reassignment"),
        leader_id=p.leader,
        replica_ids=p.replicas,
        isr_ids=p.isr,
    )


@endpoint(GET="console.view")
def partitions(request, cluster_id, topic_name):
    found = cluster(cluster_id)
    detail = inspection.topic(found, topic_name)
    return listed(
        request,
        KafkaPartitionList,
        [_partition(request, found, topic_name, p) for p in detail.partitions],
    )


def _one_partition(found, topic_name: str, partition_id: str):
    detail = inspection.topic(found, topic_name)
    return the_one(
        [p for p in detail.partitions if str(p.partition) == partition_id],
        f"Topic {topic_name!r} has no partition {partition_id[:20]!r}: it has partitions "
        f"0 to {len(detail.partitions) - 1}.",
    )


@endpoint(GET="console.view")
def partition(request, cluster_id, topic_name, partition_id):
    found = cluster(cluster_id)
    return respond(
        _partition(request, found, topic_name, _one_partition(found, topic_name, partition_id))
    )


@endpoint(GET="console.view")
def replicas(request, cluster_id, topic_name, partition_id):
    """What `confluent kafka topic describe` reads for each partition."""
    found = cluster(cluster_id)
    p = _one_partition(found, topic_name, partition_id)
    path = f"{base(found)}/topics/{topic_name}/partitions/{p.partition}/replicas"
    return listed(
        request,
        KafkaReplicaList,
        [
            KafkaReplica(
                metadata=self_url(request, f"{path}/{broker}"),
                cluster_id=found.cluster_id,
                topic_name=topic_name,
                partition_id=p.partition,
                broker_id=broker,
                is_leader=broker == p.leader,
                is_in_sync=broker in p.isr,
                broker=_related(request, f"{base(found)}/brokers/{broker}"),
            )
            for broker in p.replicas
        ],
    )


def _config(request, found, topic_name: str, c) -> KafkaTopicConfig:
    return KafkaTopicConfig(
        metadata=self_url(request, f"{base(found)}/topics/{topic_name}/configs/{c.name}"),
        cluster_id=found.cluster_id,
        topic_name=topic_name,
        name=c.name,
        value=None if c.is_sensitive else c.value,
        is_default=c.is_default,
        is_read_only=c.is_read_only,
        is_sensitive=c.is_sensitive,
        source=c.source,
        synonyms=[
            ConfigSynonym(name=n, value=None if c.is_sensitive else v, source=s)
            for n, v, s in c.synonyms
        ],
    )


@endpoint(GET="console.view")
def topic_configs(request, cluster_id, topic_name):
    found = cluster(cluster_id)
    return listed(
        request,
        KafkaTopicConfigList,
        [
            _config(request, found, topic_name, c)
            for c in inspection.topic_configs(found, topic_name)
        ],
    )


@endpoint(GET="console.view")
def topic_config(request, cluster_id, topic_name, name):
    found = cluster(cluster_id)
    chosen = the_one(
        [c for c in inspection.topic_configs(found, topic_name) if c.name == name],
        f"Topic {topic_name!r} has no config {name[:100]!r}.",
    )
    return respond(_config(request, found, topic_name, chosen))


def _group(request, found, g) -> KafkaConsumerGroup:
    path = f"{base(found)}/consumer-groups/{g.group_id}"
    return KafkaConsumerGroup(
        metadata=self_url(request, path),
        cluster_id=found.cluster_id,
        consumer_group_id=g.group_id,
        is_simple=g.is_simple,
        partition_assignor=g.partition_assignor,
        state=g.state.upper(),
        coordinator=_related(request, f"{base(found)}/brokers/{g.coordinator}"),
        consumer=_related(request, f"{path}/consumers"),
        consumers=_related(request, f"{path}/consumers"),
        lag_summary=_related(request, f"{path}/lag-summary"),
    )


@endpoint(GET="console.view")
def groups(request, cluster_id):
    found = cluster(cluster_id)
    return listed(
        request,
        KafkaConsumerGroupList,
        [_group(request, found, g) for g in inspection.groups(found)],
    )


@endpoint(GET="console.view")
def group(request, cluster_id, consumer_group_id):
    found = cluster(cluster_id)
    return respond(_group(request, found, inspection.group(found, consumer_group_id)))


@endpoint(GET="console.view")
def consumers(request, cluster_id, consumer_group_id):
    found = cluster(cluster_id)
    path = f"{base(found)}/consumer-groups/{consumer_group_id}/consumers"
    members = inspection.group(found, consumer_group_id).members
    return listed(
        request,
        KafkaConsumerList,
        [
            KafkaConsumer(
                metadata=self_url(request, f"{path}/{m.member_id}"),
                cluster_id=found.cluster_id,
                consumer_group_id=consumer_group_id,
                consumer_id=m.member_id,
                instance_id=m.instance_id,
                client_id=m.client_id,
                assignments=_related(request, f"{path}/{m.member_id}/assignments"),
            )
            for m in members
        ],
    )


def _lag(request, found, group_id: str, lag) -> KafkaConsumerLag:
    path = f"{base(found)}/consumer-groups/{group_id}/lags/{lag.topic}/partitions/{lag.partition}"
    return KafkaConsumerLag(
        metadata=self_url(request, path),
        cluster_id=found.cluster_id,
        consumer_group_id=group_id,
        topic_name=lag.topic,
        partition_id=lag.partition,
        current_offset=lag.current_offset,
        log_end_offset=lag.log_end_offset,
        lag=lag.lag,
        consumer_id=lag.consumer_id,
        instance_id=lag.instance_id,
        client_id=lag.client_id,
    )


@endpoint(GET="console.view")
def lags(request, cluster_id, consumer_group_id):
    found = cluster(cluster_id)
    return listed(
        request,
        KafkaConsumerLagList,
        [
            _lag(request, found, consumer_group_id, lag)
            for lag in inspection.group_lags(found, consumer_group_id)
        ],
    )


@endpoint(GET="console.view")
def partition_lag(request, cluster_id, consumer_group_id, topic_name, partition_id):
    found = cluster(cluster_id)
    chosen = the_one(
        [
            lag
            for lag in inspection.group_lags(found, consumer_group_id)
            if lag.topic == topic_name and str(lag.partition) == partition_id
        ],
        f"Consumer group {consumer_group_id!r} has committed no offset on partition "
        f"{partition_id[:20]} of {topic_name!r}.",
    )
    return respond(_lag(request, found, consumer_group_id, chosen))


@endpoint(GET="console.view")
def lag_summary(request, cluster_id, consumer_group_id):
    found = cluster(cluster_id)
    partition_lags = inspection.group_lags(found, consumer_group_id)
    if not partition_lags:
        raise not_found(
            f"Consumer group {consumer_group_id!r} has committed no offsets: it has no lag."
        )
    worst = max(partition_lags, key=lambda lag: lag.lag)
    path = f"{base(found)}/consumer-groups/{consumer_group_id}"
    return respond(
        KafkaConsumerGroupLagSummary(
            metadata=self_url(request, request.path),
            cluster_id=found.cluster_id,
            consumer_group_id=consumer_group_id,
            max_lag_consumer_id=worst.consumer_id,
            max_lag_instance_id=worst.instance_id,
            max_lag_client_id=worst.client_id,
            max_lag_topic_name=worst.topic,
            max_lag_partition_id=worst.partition,
            max_lag=worst.lag,
            total_lag=sum(lag.lag for lag in partition_lags),
            max_lag_consumer=_related(request, f"{path}/consumers/{worst.consumer_id}"),
            max_lag_partition=_related(
                request, f"{base(found)}/topics/{worst.topic}/partitions/{worst.partition}"
            ),
        )
    )


@endpoint(GET="console.view")
def acls(request, cluster_id):
    found = cluster(cluster_id)
    return respond(
        KafkaAclList(
            metadata=self_url(request, request.get_full_path()),
            data=[
                KafkaAcl(
                    metadata=self_url(request, f"{base(found)}/acls"),
                    cluster_id=found.cluster_id,
                    resource_type=inspection.kafka_name(b.restype),
                    resource_name=b.name,
                    pattern_type=b.resource_pattern_type.name,
                    principal=b.principal,
                    host=b.host,
                    operation=b.operation.name,
                    permission=b.permission_type.name,
                )
                for b in inspection.acls(found, request.GET.dict())
            ],
        )
    )
