"""*Isthmus*'s own paths (Confluent has none): mirror topics compared with their sources,
record by record, on demand, with progress (`kafka-mirrors --verify`)."""

from __future__ import annotations

from console.api.base import cluster, endpoint, field, json_body, self_url
from console.api.links import BASE
from console.api.mirrors import named_mirrors
from console.api.schemas import (
    MirrorVerification,
    MirrorVerificationList,
    VerifiedRange,
    respond,
)
from replication.governance import audit
from replication.models import Verification
from replication.observe import mirror_differences, verification_requests
from replication.topics.links import get_link
from replication.topics.mirrors import get_mirror

SHOWN = 20  # the newest verifications a mirror lists


def verification_data(request, found: Verification) -> MirrorVerification:
    mirror = found.mirror
    path = (
        f"{BASE.format(cluster_id=mirror.destination.cluster_id)}/{mirror.link.name}/mirrors/"
        f"{mirror.mirror_topic}/verifications/{found.pk}"
    )
    return MirrorVerification(
        metadata=self_url(request, path),
        verification_id=str(found.pk),
        link_name=mirror.link.name,
        mirror_topic_name=mirror.mirror_topic,
        state=found.state,
        requested_by=found.requested_by,
        from_offset=found.from_offset,
        to_offset=found.to_offset,
        partitions=[
            VerifiedRange(
                partition=int(p),
                first_offset=r["first"],
                end_offset=r["end"],
                compared_upto=r["at"],
            )
            for p, r in sorted(found.ranges.items(), key=lambda i: int(i[0]))
        ],
        total=found.total,
        compared=found.checked,
        identical_records=found.identical,
        differing_records=found.differing_records,
        differences=mirror_differences.differences(found),
        notes=found.notes,
        outcome=verification_requests.outcome(found),
        error_message=found.error or None,
        started_at=found.started_at.isoformat(),
        finished_at=found.finished_at.isoformat() if found.finished_at else None,
    )


def _list(request, found) -> MirrorVerificationList:
    return MirrorVerificationList(
        metadata=self_url(request, request.path),
        data=[verification_data(request, v) for v in found],
    )


@endpoint(POST="mirror.manage")
def verify(request, cluster_id, link_name):
    """Start comparing the mirror topics named, all or none; each runs in a worker (202), its
    progress read at its own path."""
    link = get_link(cluster(cluster_id), link_name)
    body = json_body(request)
    names = named_mirrors(body, link)
    first, end = field(body, "from_offset", int), field(body, "to_offset", int)
    # Every mirror found and checked before any starts: one refused, none is started.
    chosen = [get_mirror(link.destination, name, link) for name in names]
    started = verification_requests.start_all(audit.Actor.from_request(request), chosen, first, end)
    return respond(_list(request, started), status=202)


@endpoint(GET="console.view")
def verifications(request, cluster_id, link_name, mirror_topic_name):
    destination = cluster(cluster_id)
    mirror = get_mirror(destination, mirror_topic_name, get_link(destination, link_name))
    return respond(_list(request, mirror.verifications.all()[:SHOWN]))


@endpoint(GET="console.view")
def verification_detail(request, cluster_id, link_name, mirror_topic_name, verification_id):
    destination = cluster(cluster_id)
    mirror = get_mirror(destination, mirror_topic_name, get_link(destination, link_name))
    return respond(verification_data(request, verification_requests.get(mirror, verification_id)))
