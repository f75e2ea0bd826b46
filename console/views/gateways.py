"""The gateways' pages: the list, one gateway (its route, proxy and switches), a new one, a
change, a switch and a deletion (replication/kafka/gateways.py does each)."""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse

from console.access import require
from console.forms.gateways import GatewayChangeForm, GatewayForm
from console.views.actions import bound, confirm
from console.views.clusters import find_cluster
from replication.core.errors import ReplicationError
from replication.governance import audit
from replication.kafka import gateways
from replication.models import Gateway


def find_gateway(name: str) -> Gateway:
    try:
        return gateways.get_gateway(name)
    except ReplicationError as exc:
        raise Http404(str(exc)) from exc


@require("console.view")
def gateway_list(request):
    found = list(Gateway.objects.select_related("route").prefetch_related("clusters"))
    rows = [(gateway, gateways.running(gateway)) for gateway in found]
    return render(request, "gateways/list.html", {"rows": rows})


@require("console.view")
def gateway_detail(request, name):
    gateway = find_gateway(name)
    running = gateways.running(gateway)
    clusters = list(gateway.clusters.order_by("name"))
    return render(
        request,
        "gateways/detail.html",
        {
            "gateway": gateway,
            "running": running,
            "connections": gateways.connections(gateway) if running else None,
            "clusters": clusters,
            "others": [c for c in clusters if c.pk != gateway.route_id],
            "log": "" if running else gateways.log_tail(gateway),
            "change": GatewayChangeForm(initial={"address": gateway.address, "clusters": clusters}),
        },
    )


@require("gateway.manage")
def gateway_create(request):
    form = GatewayForm(bound(request))
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            gateway = gateways.define(
                audit.Actor.from_request(request),
                data["name"],
                data["address"],
                list(data["clusters"]),
                data["route"],
            )
        except ReplicationError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(
                request,
                f"Gateway {gateway.name} answers at {gateway.address} and routes to "
                f"{gateway.route.name}: its clients connect there instead of to the cluster.",
            )
            return redirect("gateway-detail", gateway.name)
    return render(request, "gateways/form.html", {"form": form})


@require("gateway.manage")
def gateway_change(request, name):
    gateway = find_gateway(name)
    form = GatewayChangeForm(bound(request))
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            gateways.change(
                audit.Actor.from_request(request),
                gateway,
                address=data["address"],
                clusters=list(data["clusters"]),
            )
        except ReplicationError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"Changed gateway {gateway.name}.")
            return redirect("gateway-detail", gateway.name)
    return render(request, "gateways/change.html", {"form": form, "gateway": gateway})


@require("gateway.manage")
def gateway_switch(request, name, cluster):
    gateway = find_gateway(name)
    target = find_cluster(cluster)
    return confirm(
        request,
        question=f"Switch gateway {gateway.name} to {target.name}?",
        verb="switch",
        explanation=f"Every client of {gateway.address} is moved from {gateway.route.name} to "
        f"{target.name}: the proxy restarts there, and clients reconnect by themselves after a "
        "pause of a few seconds. A producer's batch unacknowledged at that moment may land on "
        "both clusters; a consumer carries its offsets over as they are. Outside a cutover, "
        "make sure the topics are writable there first.",
        run=lambda actor: gateways.switch(actor, gateway, target),
        done=f"Gateway {gateway.name} routes its clients to {target.name} now.",
        back_url=reverse("gateway-detail", args=[gateway.name]),
        typed=gateway.name,
        undo=f"a switch back to {gateway.route.name} undoes it.",
    )


@require("gateway.manage")
def gateway_delete(request, name):
    gateway = find_gateway(name)
    return confirm(
        request,
        question=f"Delete gateway {gateway.name}?",
        verb="delete",
        explanation=f"Its proxy stops: every client connected through {gateway.address} loses "
        "its connection, and new ones are refused. The clusters are not touched.",
        run=lambda actor: gateways.delete(actor, gateway),
        done=f"Deleted gateway {gateway.name}.",
        back_url=reverse("gateway-detail", args=[gateway.name]),
        after_url=reverse("gateways"),
        typed=gateway.name,
    )
