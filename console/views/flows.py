"""Merge flows on the console: made from a link's page, each with a page of its own (what it
copied, its lag per partition), paused, resumed and deleted from there."""

from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse

from console.access import require
from console.charts import RANGE_WORDS, chart
from console.forms.approvals import StopForm
from console.forms.flows import FlowForm, ReplicatorImportForm
from console.views.actions import bound, confirm
from console.views.approvals import after_asking
from console.views.clusters import find_cluster
from console.views.links import chart_range, find_link, link_url
from replication.actions import approvals, replicator_import
from replication.core.errors import ReplicationError
from replication.governance import audit
from replication.models import ApprovalRequest, MergeFlow
from replication.observe import history
from replication.topics import flow_offsets, merge_flows, offset_sync

Action = ApprovalRequest.Action


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
        data = form.cleaned_data
        params = {k: data[k] or None for k in ("source_topic", "destination_topic", "mapping")}
        params["flow"] = data["name"] or None
        try:
            submission = approvals.submit(
                audit.Actor.from_request(request),
                link,
                Action.CREATE_FLOW,
                reason=data["reason"],
                params=params,
            )
        except ReplicationError as exc:
            form.add_error(None, str(exc))
        else:
            if submission.request is None:
                messages.success(request, "Created the merge flow.")
                flow = data["name"] or f"{link.name}.{data['source_topic']}"
                return redirect(flow_url(merge_flows.get_flow(link, flow)))
            return after_asking(request, submission, link_url(link), "creating the merge flow")
    return render(
        request,
        "flows/form.html",
        {"form": form, "link": link, "acts_at_once": approvals.acts_at_once(request.user, link)},
    )


@require("console.view")
def flow_detail(request, destination, name, flow):
    found = find_flow(destination, name, flow)
    return render(
        request,
        "flows/detail.html#live" if request.htmx else "flows/detail.html",
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
    form = StopForm(bound(request), name=found.name)
    if request.method == "POST" and form.is_valid():
        try:
            submission = approvals.submit(
                audit.Actor.from_request(request),
                found.link,
                Action.DELETE_FLOW,
                reason=form.cleaned_data["reason"],
                params={"flow": found.name},
            )
        except ReplicationError as exc:
            form.add_error(None, str(exc))
        else:
            if submission.request is None:
                messages.success(request, f"Deleted merge flow {found.name}.")
                return redirect(link_url(found.link) + "#flows")
            return after_asking(
                request, submission, flow_url(found), f"deleting merge flow {found.name}"
            )
    return render(
        request,
        "flows/delete.html",
        {
            "flow": found,
            "form": form,
            "acts_at_once": approvals.acts_at_once(request.user, found.link),
        },
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
                asked = [r.pk for r in made.values() if isinstance(r, ApprovalRequest)]
                if created:
                    messages.success(request, f"Created {len(created)} merge flow(s).")
                if asked:
                    messages.success(
                        request,
                        f"Asked for approval of {len(asked)} merge flow(s): request(s) "
                        f"{', '.join(map(str, asked))}.",
                    )
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
