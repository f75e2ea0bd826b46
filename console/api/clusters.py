"""Kafka REST v3 cluster endpoints: the registered clusters, by their real cluster id."""

from console.api.base import cluster, endpoint, self_url
from console.api.schemas import ClusterRelated, KafkaCluster, KafkaClusterList, respond
from replication.models import KafkaCluster as Cluster


def cluster_data(request, found: Cluster) -> KafkaCluster:
    path = f"/kafka/v3/clusters/{found.cluster_id}"
    return KafkaCluster(
        metadata=self_url(request, path),
        cluster_id=found.cluster_id,
        name=found.name,
        links=ClusterRelated(related=request.build_absolute_uri(f"{path}/links")),
    )


@endpoint(GET="console.view")
def clusters(request):
    return respond(
        KafkaClusterList(
            metadata=self_url(request, request.path),
            data=[cluster_data(request, c) for c in Cluster.objects.order_by("name")],
        )
    )


@endpoint(GET="console.view")
def cluster_detail(request, cluster_id):
    return respond(cluster_data(request, cluster(cluster_id)))
