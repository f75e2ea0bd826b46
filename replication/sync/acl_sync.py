"""ACL sync: the source ACLs a link's `acl.filters` select, kept equal on the destination.

Each filter is a Kafka ACL binding filter, matched by the brokers themselves (DescribeAcls on
both clusters). Of the destination's ACLs, only those the filters select are managed: the ones
the source lacks are deleted, the ones it has and the destination lacks are created. ACLs the
filters do not select are never touched.

Mirror topics stay read-only whatever is synced: their read-only rules deny WRITE and
ALTER_CONFIGS to every principal (`User:*`), and Kafka's authorizer lets a DENY win over any
ALLOW, so a synced ALLOW WRITE grants nothing on a mirror; and the sync never deletes those
rules, even where the filters select them and the source has no such ACL.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from enum import Enum

from confluent_kafka.admin import AclBinding

from infra.kafka_acls import exact_filter
from infra.kafka_admin import KafkaAdmin
from infra.kafka_errors import AuthorizerDisabled, KafkaAdminError
from replication.core import filters, read_only
from replication.core.errors import ReplicationError
from replication.governance import audit
from replication.models import ClusterLink, MirrorTopic

log = logging.getLogger(__name__)
_SYNCER = audit.Actor.system("ACL sync")


@dataclass
class Outcome:
    created: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    in_step: int = 0  # selected source ACLs present on the destination after the run


def enabled(link: ClusterLink) -> bool:
    return link.config("acl.sync.enable") == "true"


def _name(value: Enum | str | int) -> str:
    """An ACL enum's name (confluent-kafka's stubs allow text or a number there too)."""
    return value.name if isinstance(value, Enum) else str(value)


def describe(binding: AclBinding) -> str:
    """An ACL in the words of `kafka-acls --list`."""
    return (
        f"{_name(binding.permission_type)} {binding.principal} {_name(binding.operation)} from "
        f"host {binding.host} on {_name(binding.restype)} {_name(binding.resource_pattern_type)} "
        f"{binding.name!r}"
    )


def protected(link: ClusterLink) -> set[tuple]:
    """The read-only rules of every mirror topic on the link's destination that has them."""
    names = MirrorTopic.objects.filter(destination=link.destination).exclude(
        state=MirrorTopic.State.STOPPED
    )
    return {
        filters.binding_key(b)
        for name in names.values_list("mirror_topic", flat=True)
        for b in read_only.bindings(name)
    }


def _selected(
    admin: KafkaAdmin, chosen: list[filters.AclFilter], side: str
) -> dict[tuple, AclBinding]:
    found = {}
    try:
        for f in chosen:
            for binding in admin.describe_acls(f.binding_filter()):
                found[filters.binding_key(binding)] = binding
    except AuthorizerDisabled as exc:
        raise ReplicationError(
            f"The {side} cluster runs no authorizer, so it has no ACLs to "
            f"{'read' if side == 'source' else 'write'}: turn acl.sync.enable off, or enable "
            "an authorizer there."
        ) from exc
    except KafkaAdminError as exc:
        hint = (
            " The link's principal needs DESCRIBE on the source cluster to read its ACLs."
            if side == "source" and "AUTHORIZATION" in str(exc).upper()
            else ""
        )
        raise KafkaAdminError(f"{exc}{hint}", exc.code) from exc
    return found


def sync_acls(link: ClusterLink, source: KafkaAdmin, destination: KafkaAdmin) -> Outcome:
    """Make the destination's selected ACLs equal to the source's; returns what changed."""
    chosen = filters.parse_acls(link.config("acl.filters") or "")
    wanted = _selected(source, chosen, "source")
    present = _selected(destination, chosen, "destination")
    keep = protected(link)
    to_create = [b for k, b in sorted(wanted.items()) if k not in present]
    to_delete = [b for k, b in sorted(present.items()) if k not in wanted and k not in keep]
    if to_create:
        destination.create_acls(to_create)
    if to_delete:
        destination.delete_acls([exact_filter(b) for b in to_delete])
    outcome = Outcome(
        created=[describe(b) for b in to_create],
        deleted=[describe(b) for b in to_delete],
        in_step=len(wanted),
    )
    if to_create or to_delete:
        audit.record(
            _SYNCER,
            "link.acl_sync",
            f"link {link.name}",
            after={"created": outcome.created, "deleted": outcome.deleted},
        )
        log.info(
            "ACL sync over link %s: created %d and deleted %d ACLs on %s",
            link.name,
            len(to_create),
            len(to_delete),
            link.destination.name,
        )
    return outcome
