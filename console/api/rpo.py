"""A link's RPO target on the API: PUT …/links/{link_name}/rpo-target (*Isthmus*)."""

from __future__ import annotations

from console.api.base import ApiError, cluster, endpoint, json_body, no_content
from replication.governance import audit
from replication.observe import rpo
from replication.topics.links import get_link


@endpoint(PUT="link.manage")
def rpo_target(request, cluster_id, link_name):
    link = get_link(cluster(cluster_id), link_name)
    body = json_body(request)
    if set(body) != {"rpo_target_seconds"}:
        raise ApiError(
            400, 'Give only rpo_target_seconds: {"rpo_target_seconds": 60}, or null for none.'
        )
    rpo.set_target(
        audit.Actor.from_request(request), link, rpo.parse_target(body["rpo_target_seconds"])
    )
    return no_content()
