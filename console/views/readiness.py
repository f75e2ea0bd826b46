"""DR readiness: every link's RPO now against its target, its mirrors' promote preconditions
and last verification, and its drills (the page polls itself); a drill's own page; starting a
drill now and setting a link's drill schedule (operators: `drill.run`). The drills themselves
run on the scenario worker (`replication.tasks.run_drill`), never in the web request."""

from __future__ import annotations

from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse

from console.access import require
from console.views.actions import act
from console.views.links import find_link
from replication.models import ClusterLink, DrillRun, canary_topic
from replication.overview import readiness
from replication.scenarios import drills


@require("console.view")
def readiness_page(request):
    context = {"links": readiness.readiness()}
    template = "readiness/page.html#live" if request.htmx else "readiness/page.html"
    return render(request, template, context)


@require("console.view")
def drill_detail(request, pk):
    run = DrillRun.objects.select_related("link", "link__destination").filter(pk=pk).first()
    if run is None:
        raise Http404(f"There is no drill {pk}; the readiness page lists each link's recent ones.")
    template = "readiness/drill.html#live" if request.htmx else "readiness/drill.html"
    return render(request, template, {"run": run})


@require("drill.run")
def link_drill(request, destination, name):
    """Start a drill of the link now (POST; the button is on the readiness page)."""
    link = find_link(destination, name)
    if request.method != "POST":
        return redirect(readiness_url(link))
    started: list[DrillRun] = []
    if not act(
        request,
        lambda actor: started.append(drills.start(actor, link, request.user.pk)),
        f"Started a drill of link {link.name} on its canary topic {canary_topic(link)}: "
        "this page follows it.",
    ):
        return redirect(readiness_url(link))
    return redirect("drill-detail", pk=started[0].pk)


@require("drill.run")
def link_drill_schedule(request, destination, name):
    """Drill the link every N hours, or not (POST; the form is on the readiness page)."""
    link = find_link(destination, name)
    if request.method == "POST":
        hours, enabled = request.POST.get("every_hours", ""), request.POST.get("enabled") == "on"
        act(
            request,
            lambda actor: drills.set_schedule(actor, link, drills.parse_hours(hours), enabled),
            f"Saved the drill schedule of link {link.name}: "
            + ("scheduled." if enabled else "not scheduled."),
        )
    return redirect(readiness_url(link))


def readiness_url(link: ClusterLink) -> str:
    return reverse("readiness") + f"#link-{link.pk}"
