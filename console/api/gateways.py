"""*Isthmus*'s gateways on the API (Confluent has none): GET and POST /gateways; GET, PATCH and
DELETE /gateways/{gateway_name}; POST /gateways/{gateway_name}:switch. Top-level, like
/clusters: a gateway may route to any of the registered clusters."""

from __future__ import annotations

from console.api.base import ApiError, endpoint, field, json_body, no_content, self_url
from console.api.cluster_reads import listed
from console.api.schemas import GatewayData, GatewayDataList, respond
from replication.governance import audit
from replication.kafka import gateways as service
from replication.models import Gateway, KafkaCluster

BASE = "/kafka/v3/gateways"


def gateway_data(request, gateway: Gateway) -> GatewayData:
    running = service.running(gateway)
    connections = service.connections(gateway) if running else None
    return GatewayData(
        metadata=self_url(request, f"{BASE}/{gateway.name}"),
        gateway_name=gateway.name,
        address=gateway.address,
        cluster_names=sorted(c.name for c in gateway.clusters.all()),
        route_cluster_name=gateway.route.name,
        running=running,
        connections_total=None if connections is None else int(connections),
        switches=gateway.switches,
        switched_at=gateway.switched_at.isoformat() if gateway.switched_at else None,
    )


def _known_keys(body: dict, keys: set[str]) -> None:
    if unknown := sorted(set(body) - keys):
        raise ApiError(
            400, f"Unknown field(s) {', '.join(unknown)}; give {', '.join(sorted(keys))}."
        )


def _cluster(name: str) -> KafkaCluster:
    found = KafkaCluster.objects.filter(name=name).first()
    if found is None:
        raise ApiError(400, f"No cluster named {name!r} is registered; GET /clusters lists them.")
    return found


def _clusters(body: dict) -> list[KafkaCluster] | None:
    names = field(body, "cluster_names", list)
    if names is None:
        return None
    if not all(isinstance(n, str) for n in names):
        raise ApiError(400, "'cluster_names' must be a list of registered clusters' names.")
    return [_cluster(n) for n in dict.fromkeys(names)]


@endpoint(GET="console.view", POST="gateway.manage")
def gateways(request):
    if request.method == "GET":
        found = Gateway.objects.select_related("route").prefetch_related("clusters")
        return listed(request, GatewayDataList, [gateway_data(request, g) for g in found])
    body = json_body(request)
    _known_keys(body, {"gateway_name", "address", "cluster_names", "route_cluster_name"})
    name = field(body, "gateway_name", str, required=True)
    address = field(body, "address", str, required=True)
    clusters = _clusters(body)
    if not clusters:
        raise ApiError(400, "The request body needs 'cluster_names': the clusters it may route to.")
    route = _cluster(field(body, "route_cluster_name", str, required=True))
    made = service.define(audit.Actor.from_request(request), name, address, clusters, route)
    return respond(gateway_data(request, made), 201)


@endpoint(GET="console.view", PATCH="gateway.manage", DELETE="gateway.manage")
def gateway(request, gateway_name):
    found = service.get_gateway(gateway_name)
    actor = audit.Actor.from_request(request)
    if request.method == "GET":
        return respond(gateway_data(request, found))
    if request.method == "DELETE":
        service.delete(actor, found)
        return no_content()
    body = json_body(request)
    _known_keys(body, {"address", "cluster_names"})
    if not body:
        raise ApiError(400, "Give 'address', 'cluster_names' or both: nothing was changed.")
    address = field(body, "address", str)
    changed = service.change(actor, found, address=address, clusters=_clusters(body))
    return respond(gateway_data(request, changed))


@endpoint(POST="gateway.manage")
def gateway_switch(request, gateway_name):
    found = service.get_gateway(gateway_name)
    body = json_body(request)
    _known_keys(body, {"cluster_name"})
    target = _cluster(field(body, "cluster_name", str, required=True))
    switched = service.switch(audit.Actor.from_request(request), found, target)
    return respond(gateway_data(request, switched))
