"""Merge flows on the console: made from a link's page, each with a page of its own (what it
copied, its lag per partition), paused, resumed and deleted from there."""

from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse

from console.access import require
from console.charts import RANGE_WORDS, chart
from console.forms.flows import FlowForm, ReplicatorImportForm
from console.views.actions import act, bound, confirm
from console.views.clusters import find_cluster
from console.views.links import chart_range, find_link, link_url
from replication import audit, flow_offsets, history, merge_flows, offset_sync, replicator_import
from replication.errors import ReplicationError
from replication.models import MergeFlow


def find_flow(destination: str, name: str, flow: str) -> MergeFlow:
    try:
        return merge_flows.get_flow(find_link(destination, name), flow)
    except ReplicationError as exc:
        raise Http404(str(exc)) from exc


def flow_url(flow: MergeFlow) -> str:
    return reverse("flow-detail", args=[flow.destination.name, flow.link.name, flow.name])


@require("flow.manage")
def flow_create(request, destination, name):
    link = find_link(destination, name)
    form = FlowForm(bound(request))
    if request.method == "POST" and form.is_valid():
        made = []
        data = form.cleaned_data

        def create(actor):
            made.append(
                merge_flows.create_flow(
                    actor,
                    link,
                    data["source_topic"],
                    data["destination_topic"] or None,
                    name=data["name"] or None,
                    mapping=data["mapping"] or None,
                )
            )

        if act(request, create, "Created the merge flow."):
            return redirect(flow_url(made[0]))
    return render(request, "flows/form.html", {"form": form, "link": link})


@require("console.view")
def flow_detail(request, destination, name, flow):
    found = find_flow(destination, name, flow)
    return render(
        request,
        "flows/detail.html",
        {
            "flow": found,
            "status": merge_flows.status(found),
            "rule": flow_offsets.rule(found),
            "groups": flow_offsets.groups(found),
            "sync_on": offset_sync.enabled(found.link),
            **_charts(request, found),
        },
    )


@require("console.view")
def flow_charts(request, destination, name, flow):
    """The flow's lag, throughput and latency over the range chosen (the page polls this)."""
    return render(request, "_charts.html", _charts(request, find_flow(destination, name, flow)))


def _charts(request, flow: MergeFlow) -> dict:
    shown = chart_range(request)
    series = history.flow_series(flow, shown)
    return {
        "charts_url": reverse(
            "flow-charts", args=[flow.destination.name, flow.link.name, flow.name]
        ),
        "charts_poll": True,
        "chart_note": "As the engine reports the flow every 10 s: lag is each source "
        "partition's end less how far the flow copied it; latency, the time from the newest "
        "copied record's timestamp to its commit.",
        "charts": [
            chart("Lag", "records", series["lag"], shown),
            chart("Copied", "records/s", series["records_per_sec"], shown),
            chart("Latency", "s", series["latency_s"], shown),
        ],
        "chart_ranges": RANGE_WORDS.items(),
        "shown": shown,
    }


@require("flow.manage")
def flow_pause(request, destination, name, flow):
    found = find_flow(destination, name, flow)
    return confirm(
        request,
        question=f"Pause merge flow {found.name}?",
        verb="pause",
        explanation=f"It stops copying into {found.destination_topic} until resumed, then goes "
        "on from where it stopped.",
        run=lambda actor: merge_flows.pause_flow(actor, found),
        done=f"Paused merge flow {found.name}.",
        back_url=flow_url(found),
    )


@require("flow.manage")
def flow_resume(request, destination, name, flow):
    found = find_flow(destination, name, flow)
    return confirm(
        request,
        question=f"Resume merge flow {found.name}?",
        verb="resume",
        explanation="It copies again from where it stopped.",
        run=lambda actor: merge_flows.resume_flow(actor, found),
        done=f"Resumed merge flow {found.name}.",
        back_url=flow_url(found),
    )


@require("flow.manage")
def flow_delete(request, destination, name, flow):
    found = find_flow(destination, name, flow)
    return confirm(
        request,
        question=f"Delete merge flow {found.name}?",
        verb="delete",
        explanation=f"It stops copying. {found.destination_topic} stays, with every record "
        "copied into it. A new flow of the same topics would copy every source record again.",
        run=lambda actor: merge_flows.delete_flow(actor, found),
        done=f"Deleted merge flow {found.name}.",
        back_url=flow_url(found),
        after_url=link_url(found.link),
        typed=found.name,
    )


@require("flow.manage")
def replicator_import_page(request, destination):
    """Paste a Replicator configuration: the flows it stands for are shown (preview), then
    made (create), each refusal said."""
    cluster = find_cluster(destination)
    form = ReplicatorImportForm(bound(request))
    plan, error = None, ""
    if request.method == "POST" and form.is_valid():
        text = form.cleaned_data["configuration"]
        try:
            if request.POST.get("op") == "create":
                plan, made = replicator_import.create(
                    audit.Actor.from_request(request), cluster, text
                )
                refused = [
                    f"{s} into {d}: {e}" for (s, d), e in made.items() if isinstance(e, Exception)
                ]
                created = [f for f in made.values() if isinstance(f, MergeFlow)]
                if created:
                    messages.success(request, f"Created {len(created)} merge flow(s).")
                for line in refused:
                    messages.error(request, line)
                if not refused:
                    return redirect(link_url(plan.link) + "#flows")
            else:
                plan = replicator_import.plan(cluster, text)
        except ReplicationError as exc:
            error = str(exc)
    return render(
        request,
        "flows/import.html",
        {"form": form, "cluster": cluster, "plan": plan, "error": error},
    )
