"""Kafka REST v3 cluster endpoints: the registered clusters, by their real cluster id."""

from django.http import JsonResponse

from console.api.base import cluster, endpoint, self_url
from replication.models import KafkaCluster


def cluster_data(request, found: KafkaCluster) -> dict:
    path = f"/kafka/v3/clusters/{found.cluster_id}"
    return {
        "kind": "KafkaCluster",
        "metadata": self_url(request, path),
        "cluster_id": found.cluster_id,
        "name": found.name,
        "links": {"related": request.build_absolute_uri(f"{path}/links")},
    }


@endpoint(GET="console.view")
def clusters(request):
    return JsonResponse(
        {
            "kind": "KafkaClusterList",
            "metadata": self_url(request, request.path),
            "data": [cluster_data(request, c) for c in KafkaCluster.objects.order_by("name")],
        }
    )


@endpoint(GET="console.view")
def cluster_detail(request, cluster_id):
    return JsonResponse(cluster_data(request, cluster(cluster_id)))
