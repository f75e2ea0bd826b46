"""Kafka REST v3 cluster endpoints: the registered clusters, by their real cluster id."""

from console.api.base import api_url, cluster, endpoint, root_clusters, self_url
from console.api.schemas import (
    ClusterRelated,
    KafkaCluster,
    KafkaClusterList,
    Relationship,
    respond,
)
from replication.models import KafkaCluster as Cluster

# Kafka REST's relationships of a cluster, by field, and where Kafka REST serves them.
RELATIONSHIPS = {
    "acls": "acls",
    "brokers": "brokers",
    "broker_configs": "broker-configs",
    "consumer_groups": "consumer-groups",
    "topics": "topics",
    "partition_reassignments": "topics/-/partitions/-/reassignment",
}


def cluster_data(request, found: Cluster) -> KafkaCluster:
    path = f"/kafka/v3/clusters/{found.cluster_id}"
    return KafkaCluster(
        metadata=self_url(request, path),
        cluster_id=found.cluster_id,
        name=found.name,
        links=ClusterRelated(related=api_url(request, f"{path}/links")),
        **{
            name: Relationship(related=api_url(request, f"{path}/{tail}"))
            for name, tail in RELATIONSHIPS.items()
        },
    )


@endpoint(GET="console.view")
def clusters(request):
    return respond(
        KafkaClusterList(
            metadata=self_url(request, request.path),
            data=[cluster_data(request, c) for c in root_clusters(request)],
        )
    )


@endpoint(GET="console.view")
def cluster_detail(request, cluster_id):
    return respond(cluster_data(request, cluster(cluster_id)))
