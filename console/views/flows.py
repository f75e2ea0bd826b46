"""Merge flows on the console: made from a link's page, each with a page of its own (what it
copied, its lag per partition), paused, resumed and deleted from there."""

from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse

from console.access import require
from console.forms.flows import FlowForm
from console.views.actions import act, bound, confirm
from console.views.links import find_link, link_url
from replication import merge_flows
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
        request, "flows/detail.html", {"flow": found, "status": merge_flows.status(found)}
    )


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
