from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect, render

from console.access import require
from console.forms.clusters import ClusterForm, SchemaRegistryForm
from console.views.actions import bound
from infra.kafka_errors import KafkaAdminError
from replication.core.errors import ReplicationError
from replication.governance import audit
from replication.kafka.clusters import (
    cluster_links,
    cluster_topics,
    parse_client_config,
    probe_cluster,
    probe_clusters,
    register_cluster,
)
from replication.models import KafkaCluster
from replication.overview import dashboard
from replication.schemas import schema_registries


def find_cluster(name: str) -> KafkaCluster:
    """The registered cluster `name`; else a 404 that says so (not Django's model words)."""
    found = KafkaCluster.objects.filter(name=name).first()
    if found is None:
        raise Http404(f"No cluster named {name!r} is registered; the Clusters page lists them.")
    return found


@require("console.view")
def cluster_list(request):
    template = "clusters/list.html#status-table" if request.htmx else "clusters/list.html"
    return render(request, template, {"healths": probe_clusters()})


@require("console.view")
def cluster_detail(request, name):
    cluster = find_cluster(name)
    health = probe_cluster(cluster)
    topics, topics_error = [], ""
    if health.reachable:
        try:
            topics = cluster_topics(cluster)
        except KafkaAdminError as exc:
            topics_error = str(exc)
    into, out_of = cluster_links(cluster)
    return render(
        request,
        "clusters/detail.html",
        {
            "health": health,
            "topics": topics,
            "topics_error": topics_error,
            "links_into": dashboard.link_summaries(into),
            "links_from": dashboard.link_summaries(out_of),
            # The beat's latest reading: a page never waits on a registry.
            "registry": schema_registries.latest(cluster),
        },
    )


@require("cluster.register")
def cluster_create(request):
    form = ClusterForm(bound(request))
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            cluster = register_cluster(
                audit.Actor.from_request(request),
                data["name"],
                data["bootstrap_servers"],
                parse_client_config(data["client_config"]),
                parse_client_config(data["link_config"]),
                form.access(),
                engine=data["engine"],
            )
        except ReplicationError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(
                request, f"Registered cluster {cluster.name} (id {cluster.cluster_id})."
            )
            return redirect("clusters")
    return render(request, "clusters/form.html", {"form": form})


@require("cluster.register")
def cluster_schema_registry(request, name):
    """Set, change or remove the cluster's schema registry."""
    cluster = find_cluster(name)
    initial = {
        "schema_registry_url": cluster.schema_registry_url,
        "schema_registry_username": cluster.schema_registry_username,
    }
    form = SchemaRegistryForm(bound(request), initial=initial)
    if request.method == "POST" and form.is_valid():
        try:
            schema_registries.set_schema_registry(
                audit.Actor.from_request(request), cluster, form.access()
            )
        except ReplicationError as exc:
            form.add_error(None, str(exc))
        else:
            where = cluster.schema_registry_url
            said = (
                f"Schema registry of {cluster.name}: {where}."
                if where
                else (f"{cluster.name} has no schema registry now.")
            )
            messages.success(request, said)
            return redirect("cluster-detail", cluster.name)
    return render(request, "clusters/schema_registry.html", {"form": form, "cluster": cluster})
