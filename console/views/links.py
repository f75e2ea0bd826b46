"""Cluster link pages: list, create, detail with configs and mirrors, pause / resume / delete."""

from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse

from console.access import require
from console.forms import LinkConfigForm, LinkForm, filter_editors
from console.views.actions import act, bound, confirm, form_errors
from console.views.clusters import find_cluster
from replication import acl_sync, audit, auto_mirrors, links, offset_sync, streams, syncers
from replication.clusters import probe_cluster
from replication.errors import ReplicationError
from replication.models import ClusterLink, KafkaCluster


def find_link(destination: str, name: str) -> ClusterLink:
    cluster = find_cluster(destination)
    try:
        return links.get_link(cluster, name)
    except ReplicationError as exc:
        raise Http404(str(exc)) from exc


def with_source_names(found):
    """Name each link's source where it is a registered cluster."""
    names = dict(KafkaCluster.objects.values_list("cluster_id", "name"))
    for link in found:
        link.source_name = names.get(link.source_cluster_id, "")
    return found


@require("console.view")
def link_list(request):
    return render(request, "links/list.html", {"links": with_source_names(links.list_links())})


@require("link.manage")
def link_create(request):
    form = LinkForm(bound(request))
    if request.method == "POST" and form.is_valid():
        try:
            link = links.create_link(
                audit.Actor.from_request(request),
                form.cleaned_data["destination"],
                form.cleaned_data["name"],
                form.link_configs(),
            )
        except ReplicationError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"Created cluster link {link.name}.")
            return redirect("link-detail", link.destination.name, link.name)
    return render(request, "links/form.html", {"form": form})


@require("console.view")
def link_detail(request, destination, name):
    link = with_source_names([find_link(destination, name)])[0]
    return render(
        request,
        "links/detail.html",
        {
            "link": link,
            "configs": links.describe_link_configs(link),
            "mirrors": link.mirrors.all(),
            "destination_health": probe_cluster(link.destination),
            "stream": streams.status(link),
            "pending_requests": link.approval_requests.filter(state="PENDING"),
            "config_form": LinkConfigForm(),
            "filter_editors": filter_editors(link),
            "sync": offset_sync.status(link),
            "syncs": {
                "acl_enabled": acl_sync.enabled(link),
                "acl_interval_ms": link.int_config("acl.sync.ms"),
                "acl_problem": link.sync_problems.get(syncers.ACLS, ""),
                "auto_enabled": auto_mirrors.enabled(link),
                "auto_problem": link.sync_problems.get(syncers.AUTO_CREATE, ""),
            },
        },
    )


@require("link.manage")
def link_configs_alter(request, destination, name):
    link = find_link(destination, name)
    if request.method != "POST":  # the form is on the link's page
        return redirect("link-detail", destination, name)
    form = LinkConfigForm(request.POST)
    if not form.is_valid():
        messages.error(request, form_errors(form))
    else:
        to_set, to_reset = form.cleaned_data["set"], form.names_to_reset()
        act(
            request,
            lambda actor: links.alter_link_configs(actor, link, to_set, to_reset),
            f"Changed the configs of link {link.name}: "
            + ", ".join([*to_set, *(f"{n} reset" for n in to_reset)])
            + ".",
        )
    return redirect("link-detail", destination, name)


@require("link.manage")
def link_pause(request, destination, name):
    link = find_link(destination, name)
    return confirm(
        request,
        question=f"Pause cluster link {link.name}?",
        explanation="Every mirror of the link stops fetching and shows LINK_PAUSED. "
        "The mirrors stay read-only.",
        run=lambda actor, force: links.pause_link(actor, link),
        done=f"Paused cluster link {link.name}.",
        back_url=link_url(link),
    )


@require("link.manage")
def link_resume(request, destination, name):
    link = find_link(destination, name)
    return confirm(
        request,
        question=f"Resume cluster link {link.name}?",
        explanation="Its mirrors fetch again, except those paused on their own. A failed "
        "link's stream starts afresh.",
        run=lambda actor, force: links.resume_link(actor, link),
        done=f"Resumed cluster link {link.name}.",
        back_url=link_url(link),
    )


def link_url(link: ClusterLink) -> str:
    return reverse("link-detail", args=[link.destination.name, link.name])
