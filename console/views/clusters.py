from django.contrib import messages
from django.shortcuts import get_object_or_404, redirect, render

from console.access import require
from console.forms import ClusterForm
from replication import audit
from replication.clusters import (
    parse_client_config,
    probe_cluster,
    probe_clusters,
    register_cluster,
)
from replication.errors import ReplicationError
from replication.models import KafkaCluster


@require("console.view")
def cluster_list(request):
    template = "clusters/list.html#status-table" if request.htmx else "clusters/list.html"
    return render(request, template, {"healths": probe_clusters()})


@require("console.view")
def cluster_detail(request, name):
    cluster = get_object_or_404(KafkaCluster, name=name)
    return render(request, "clusters/detail.html", {"health": probe_cluster(cluster)})


@require("cluster.register")
def cluster_create(request):
    form = ClusterForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            cluster = register_cluster(
                audit.Actor.from_request(request),
                data["name"],
                data["bootstrap_servers"],
                parse_client_config(data["client_config"]),
            )
        except ReplicationError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(
                request, f"Registered cluster {cluster.name} (id {cluster.cluster_id})."
            )
            return redirect("clusters")
    return render(request, "clusters/form.html", {"form": form})
