"""The embedded stack's gateways (docs/gateways.md): each defined gateway's Kroxylicious is a
part, `gateway-NAME`, and `gateway` stands for all of them. They start with the stack once
one is defined, else not at all; a switch restarts a gateway's proxy itself
(replication/kafka/gateways.py), at the same pid and log files. Its address is the gateway's
own, on loopback unless ISTHMUS_GATEWAY_ANY_ADDRESS."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.conf import settings
from django.db import DatabaseError

from infra import kroxylicious
from replication.kafka import gateways
from replication.models import Gateway

if TYPE_CHECKING:
    from .stack import Component

GROUP = "gateway"


def parts() -> list[Component]:
    """A part for each defined gateway: none before the database has its table, nor where
    the database may not be read (pytest-django's RuntimeError: the tests' stack, whose
    gateways their tests start and stop)."""
    try:
        defined = list(Gateway.objects.select_related("route"))
    except (DatabaseError, RuntimeError):
        return []
    return [_part(gateway) for gateway in defined]


def _part(gateway: Gateway) -> Component:
    from .stack import Component

    route = gateways.route_to(gateway, gateway.route)
    config = gateways.config_file(gateway)
    expected = gateway.route.cluster_id

    def ready() -> bool:
        found = kroxylicious.cluster_id(route)
        return not expected or found == expected

    return Component(
        name=gateways.part_name(gateway),
        address=f"{gateway.address} (routes to {gateway.route.name})",
        ports=tuple(route.ports),
        prepare=lambda: kroxylicious.write_config(config, route),
        command=lambda: kroxylicious.command(config),
        ready=ready,
        start_timeout=settings.GATEWAY_START_S,
    )
