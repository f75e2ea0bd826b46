"""Cluster links: list, alter configs, pause, resume, and a bidirectional link's other half.
One function per state change; a link is created in `link_creation`, deleted in
`cutover/link_deletion`, and the availability check's changes are `link_availability`'s."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence

from django.db import transaction
from django.db.models import QuerySet

from infra.client_config import librdkafka_config
from infra.kafka_admin import KafkaAdmin
from infra.kafka_errors import KafkaAdminError
from replication.core import crypto, link_config_validation, link_configs
from replication.core.errors import ReplicationError, conflict, not_found
from replication.governance import audit
from replication.kafka.connections import connect
from replication.models import ClusterLink, KafkaCluster, MirrorTopic
from replication.states import link_states
from replication.states.mirror_states import move_all

log = logging.getLogger(__name__)

State = ClusterLink.State


def get_link(destination: KafkaCluster, name: str) -> ClusterLink:
    link = ClusterLink.objects.filter(destination=destination, name=name).first()
    if link is None:
        raise not_found(
            f"No cluster link named {name!r} on cluster {destination.name}. "
            "List the links to see their names."
        )
    return link


def list_links(destination: KafkaCluster | None = None) -> QuerySet[ClusterLink]:
    """Links with their mirror topics, optionally only those into `destination`."""
    links = ClusterLink.objects.select_related("destination").prefetch_related("mirrors")
    return links.filter(destination=destination) if destination else links


def snapshot(link: ClusterLink) -> dict:
    """What the audit trail keeps of a link: no secret values."""
    return {
        "state": link.state,
        "source_cluster_id": link.source_cluster_id,
        "configs": crypto.masked(link.configs, link.secret_configs),
    }


def check_source(
    config: dict[str, str], expected_id: str | None, remote: str = "source", zone: str = ""
) -> str:
    """Reach the link's `remote` cluster (its source; a source half's, its destination) with
    the link's credentials, from network zone `zone` (that of the engine that copies the
    link); return its cluster id.

    The link must be able to describe the cluster and list its topics.
    """
    admin: KafkaAdmin = connect(librdkafka_config(config), zone)
    try:
        cluster_id = admin.describe_cluster().cluster_id
        admin.list_topic_names()
    except KafkaAdminError as exc:
        raise ReplicationError(
            f"The link cannot reach its {remote}. {exc} Nothing was changed."
        ) from exc
    if expected_id and cluster_id != expected_id:
        raise conflict(
            f"bootstrap.servers reaches cluster {cluster_id}, not the expected {remote} cluster "
            f"{expected_id}. Check bootstrap.servers. Nothing was changed."
        )
    return cluster_id


def peer_of(link: ClusterLink) -> ClusterLink:
    """The other half of a bidirectional link: the link of the same name on its source
    cluster, reading from its destination. Refused, saying why, for any other link."""
    if link.config("link.mode") != "BIDIRECTIONAL":
        raise ReplicationError(
            f"Cluster link {link.name!r} is not bidirectional (link.mode "
            f"{link.config('link.mode')}); reverse operations need a bidirectional link, as in "
            "Confluent's Cluster Linking. Create one with link.mode=BIDIRECTIONAL between the "
            "two registered clusters. Nothing was changed."
        )
    peer = (
        ClusterLink.objects.select_related("destination")
        .filter(
            name=link.name,
            destination__cluster_id=link.source_cluster_id,
            source_cluster_id=link.destination.cluster_id,
        )
        .first()
    )
    if peer is None:
        raise not_found(
            f"The other half of bidirectional link {link.name!r}, on cluster "
            f"{link.source_cluster_id}, is gone; create it again with link.mode=BIDIRECTIONAL. "
            "Nothing was changed."
        )
    return peer


def other_half(link: ClusterLink) -> ClusterLink | None:
    """The other half of a bidirectional link; None for a one-way link or a half whose other
    half is gone (its link.mode says it is bidirectional)."""
    if link.config("link.mode") != "BIDIRECTIONAL":
        return None
    try:
        return peer_of(link)
    except ReplicationError:
        return None


def other_halves(links: Iterable[ClusterLink]) -> dict[int, ClusterLink]:
    """The other half of each bidirectional link of `links` that has one, by the link's pk, in
    one query for all, with their mirrors and merge flows (a list of many links asks no
    queries per link)."""
    both_ways = [link for link in links if link.config("link.mode") == "BIDIRECTIONAL"]
    if not both_ways:
        return {}
    candidates = (
        ClusterLink.objects.select_related("destination")
        .prefetch_related("mirrors", "flows")
        .filter(name__in={link.name for link in both_ways})
    )
    by_ends = {(p.name, p.destination.cluster_id, p.source_cluster_id): p for p in candidates}
    return {
        link.pk: peer
        for link in both_ways
        if (peer := by_ends.get((link.name, link.source_cluster_id, link.destination.cluster_id)))
    }


def describe_link_configs(link: ClusterLink) -> list[link_configs.ConfigEntry]:
    return link_configs.describe(link.configs, link.secret_configs)


def alter_link_configs(
    actor: audit.Actor,
    link: ClusterLink,
    to_set: dict[str, str],
    to_delete: Sequence[str] = (),
    *,
    validate_only: bool = False,
) -> ClusterLink:
    """Set and delete (reset to default) link configs; all or nothing.

    New connection settings must still reach the link's source cluster. Setting
    cluster.link.paused pauses or resumes the link.
    """
    with audit.refusals(actor, "link.alter_configs", f"link {link.name}"):
        if not to_set and not to_delete:
            raise ReplicationError(
                "Nothing to change: give configs to set (key=value) or names to reset."
            )
        problems = _change_problems(link, to_set, to_delete)
        if problems:
            raise ReplicationError(" ".join(problems))
        names = [*to_set, *to_delete]
        clean = _merged_configs(link, to_set, to_delete)
        if any(link_configs.KEYS[n].connection for n in names):
            check_source(clean, link.source_cluster_id, zone=link.engine)
        if validate_only:
            return link
        # One change, one event: pausing or resuming by the config is part of it.
        with transaction.atomic():
            # The link as it is now, locked (its row on PostgreSQL; on SQLite the IMMEDIATE
            # transaction holds the write lock): what this request read before may be stale.
            # Merged into the stored configs, a concurrent change of another key is kept, not
            # overwritten; a link deleted meanwhile is refused, not "saved" into nothing.
            fresh = ClusterLink.objects.select_for_update().filter(pk=link.pk).first()
            if fresh is None:
                raise not_found(f"Cluster link {link.name!r} was deleted meanwhile.")
            link.configs, link.secret_configs = fresh.configs, fresh.secret_configs
            link.state = fresh.state
            clean = _merged_configs(link, to_set, to_delete)
            was_paused = link.state == State.PAUSED
            wants_paused = clean.pop("cluster.link.paused", "false") == "true"
            if was_paused:  # pause_link and resume_link own this key
                clean["cluster.link.paused"] = "true"
            before = snapshot(link)
            link.set_configs(clean)
            link.save(update_fields=["configs", "secret_configs"])
            if wants_paused and not was_paused:
                _pause(link)
            elif was_paused and not wants_paused:
                _resume(link)
            audit.record(
                actor,
                "link.alter_configs",
                f"link {link.name}",
                before=before,
                after=snapshot(link),
                in_change=True,
            )
    return link


def _change_problems(
    link: ClusterLink, to_set: dict[str, str], to_delete: Sequence[str]
) -> list[str]:
    """What is wrong with a config change before it is checked against the source: keys set
    at creation or read-only, unknown names to reset, a connection changed without the
    credentials it would send."""
    problems = []
    for name in [*to_set, *to_delete]:
        key = link_configs.KEYS.get(name)
        if key is None:
            continue  # validate() names it later, with the list of valid keys
        if key.immutable:
            problems.append(
                f"{name} is set when the link is created and cannot be changed: delete the link "
                f"and create it again with the {name} you want."
            )
        elif key.read_only:
            problems.append(f"{name} is read-only.")
    unknown = [n for n in to_delete if n not in link_configs.KEYS]
    if unknown:
        problems.append(
            f"Unknown link config {', '.join(map(repr, unknown))}. "
            f"Valid link configs: {', '.join(link_configs.KEYS)}."
        )
    if "bootstrap.servers" in to_delete:
        problems.append("bootstrap.servers cannot be deleted: the link needs its source.")
    both = sorted(set(to_set) & set(to_delete))
    if both:
        problems.append(
            f"{', '.join(both)} {'is' if len(both) == 1 else 'are'} both set and reset in one "
            "change: set a value, or reset to the default, not both."
        )
    changing = sorted(
        k
        for k in [*to_set, *to_delete]
        if k in link_configs.CONNECTION_KEYS
        and not crypto.is_sensitive(k)
        and to_set.get(k) != link.configs.get(k)
    )
    if changing and link.secret_configs.keys() - to_set.keys():
        # Otherwise the stored secrets could be sent to a host that merely claims the id,
        # or in the clear (security.protocol, sasl.mechanism).
        problems.append(
            f"Changing {', '.join(changing)} of a link with credentials needs the "
            f"credentials again: set {', '.join(sorted(link.secret_configs))} in the same "
            "change."
        )
    return problems


def _merged_configs(
    link: ClusterLink, to_set: dict[str, str], to_delete: Iterable[str]
) -> dict[str, str]:
    """The link's configs with `to_set` set and `to_delete` reset, checked (the changed values
    in full, the others as stored)."""
    merged = {**link.all_configs(), **to_set}
    for name in to_delete:
        merged.pop(name, None)
    return link_config_validation.validate(merged, changed=[*to_set, *to_delete])


def pause_link(actor: audit.Actor, link: ClusterLink) -> ClusterLink:
    """Pause the whole link: its running mirrors show LINK_PAUSED."""
    return _change(actor, link, "link.pause", _pause)


def resume_link(actor: audit.Actor, link: ClusterLink) -> ClusterLink:
    """Resume a paused link, or retry a failed one; its mirrors run again unless paused on
    their own."""
    return _change(actor, link, "link.resume", _resume)


def _change(actor: audit.Actor, link: ClusterLink, action: str, change) -> ClusterLink:
    """Make `change` to the link and record it, in one transaction; a refusal is audited."""
    target = f"link {link.name}"
    with audit.refusals(actor, action, target), transaction.atomic():
        before = snapshot(link)
        change(link)
        audit.record(actor, action, target, before=before, after=snapshot(link), in_change=True)
    return link


def _pause(link: ClusterLink) -> None:
    """The link PAUSED and its mirrors LINK_PAUSED (in the caller's transaction)."""
    if link.state == State.PAUSED:
        raise conflict(f"Cluster link {link.name!r} is already paused.")
    link_states.move(
        link, "pause", State.PAUSED, configs={**link.configs, "cluster.link.paused": "true"}
    )
    move_all(link.mirrors.all(), "link-pause", MirrorTopic.State.LINK_PAUSED)
    log.info("Paused cluster link %s", link.name)


def _resume(link: ClusterLink) -> None:
    """The link ACTIVE and its mirrors running again (in the caller's transaction)."""
    link_states.move(
        link,
        "resume",
        State.ACTIVE,
        configs={k: v for k, v in link.configs.items() if k != "cluster.link.paused"},
        error_code="NO_ERROR",
        error_message="",
        availability_failures=0,
        availability_checked_at=None,
    )
    restore_running(link, "link-resume")
    log.info("Resumed cluster link %s", link.name)


def restore_running(link: ClusterLink, event: str) -> None:
    """Mirrors held by the link run again, or stay paused if a user paused them."""
    move_all(link.mirrors.filter(paused=True), event, MirrorTopic.State.PAUSED)
    move_all(link.mirrors.all(), event, MirrorTopic.State.ACTIVE)
