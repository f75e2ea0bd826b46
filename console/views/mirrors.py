"""Mirror topic pages: list, create under a link, detail with the live partition table,
pause / resume / delete."""

from django.contrib import messages
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse

from console.access import require
from console.forms import MirrorForm
from console.views.actions import confirm
from console.views.links import find_link, link_url
from replication import audit, mirrors
from replication.errors import ReplicationError
from replication.models import KafkaCluster, MirrorTopic


def find_mirror(destination: str, topic: str) -> MirrorTopic:
    cluster = get_object_or_404(KafkaCluster, name=destination)
    try:
        return mirrors.get_mirror(cluster, topic)
    except ReplicationError as exc:
        raise Http404(str(exc)) from exc


def mirror_url(mirror: MirrorTopic) -> str:
    return reverse("mirror-detail", args=[mirror.destination.name, mirror.mirror_topic])


@require("console.view")
def mirror_list(request):
    state = request.GET.get("state") or None
    return render(
        request,
        "mirrors/list.html",
        {
            "mirrors": mirrors.list_mirrors(states=[state] if state else None),
            "state": state,
            "states": MirrorTopic.State.values,
        },
    )


@require("mirror.manage")
def mirror_create(request, destination, name):
    link = find_link(destination, name)
    form = MirrorForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            mirror = mirrors.create_mirror(
                audit.Actor.from_request(request),
                link,
                form.cleaned_data["source_topic"].strip(),
                replication_factor=form.cleaned_data["replication_factor"],
                configs=form.cleaned_data["configs"],
            )
        except ReplicationError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"Created mirror topic {mirror.mirror_topic}.")
            return redirect(mirror_url(mirror))
    return render(request, "mirrors/form.html", {"form": form, "link": link})


@require("console.view")
def mirror_detail(request, destination, topic):
    mirror = find_mirror(destination, topic)
    template = "mirrors/detail.html#partitions" if request.htmx else "mirrors/detail.html"
    pending = [
        r
        for r in mirror.link.approval_requests.filter(state="PENDING")
        if mirror.mirror_topic in r.topics
    ]
    return render(
        request,
        template,
        {
            "mirror": mirror,
            "status": mirrors.describe_mirror(mirror),
            "pending_requests": [] if request.htmx else pending,
        },
    )


@require("mirror.manage")
def mirror_pause(request, destination, topic):
    mirror = find_mirror(destination, topic)
    return confirm(
        request,
        question=f"Pause mirror topic {mirror.mirror_topic}?",
        explanation="It stops fetching from its source and stays read-only until resumed.",
        run=lambda actor, force: mirrors.pause_mirror(actor, mirror),
        done=f"Paused mirror topic {mirror.mirror_topic}.",
        back_url=mirror_url(mirror),
    )


@require("mirror.manage")
def mirror_resume(request, destination, topic):
    mirror = find_mirror(destination, topic)
    return confirm(
        request,
        question=f"Resume mirror topic {mirror.mirror_topic}?",
        explanation="It fetches from its source again.",
        run=lambda actor, force: mirrors.resume_mirror(actor, mirror),
        done=f"Resumed mirror topic {mirror.mirror_topic}.",
        back_url=mirror_url(mirror),
    )


@require("mirror.delete")
def mirror_delete(request, destination, topic):
    mirror = find_mirror(destination, topic)
    return confirm(
        request,
        question=f"Delete mirror topic {mirror.mirror_topic}?",
        explanation=f"The topic and all its data are deleted from {mirror.destination.name}. "
        "The source topic is not touched.",
        run=lambda actor, force: mirrors.delete_mirror(actor, mirror),
        done=f"Deleted mirror topic {mirror.mirror_topic}.",
        back_url=mirror_url(mirror),
        after_url=link_url(mirror.link),
    )
