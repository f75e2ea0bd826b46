"""Creating a cluster link: its name and configs checked, its source asked with the link's
credentials, and for link.mode=BIDIRECTIONAL its other half made with it (the same name, from
the destination into the source, each half with the other cluster's link principal)."""

from __future__ import annotations

import logging
from typing import Any, NamedTuple

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from infra.kafka_admin import kafka_uuid
from replication.core import link_config_validation, link_configs, link_credentials
from replication.core.errors import FieldProblems, ReplicationError, conflict, not_found
from replication.governance import audit
from replication.models import NAME_VALIDATOR, ClusterLink, KafkaCluster
from replication.topics import links

log = logging.getLogger(__name__)

State = ClusterLink.State


class Creation(NamedTuple):
    """A create's outcome: the link, and whether it was made now (False: the create named the
    existing other half of a bidirectional link, as the second side of Confluent's recipe does)."""

    link: ClusterLink
    made: bool


def create_link(*args: Any, **kwargs: Any) -> ClusterLink:
    """`create_or_join`'s link, for callers that do not tell a new link from a joined half."""
    return create_or_join(*args, **kwargs).link


def create_or_join(
    actor: audit.Actor,
    destination: KafkaCluster,
    name: str,
    configs: dict[str, str],
    *,
    source_cluster_id: str | None = None,
    validate_only: bool = False,
    validate_link: bool = True,
    source: KafkaCluster | None = None,
    cluster_link_id: str | None = None,
) -> Creation:
    """Create a link into `destination` from the source that `configs` connect to, or from the
    registered cluster `source` (its address and link principal; `configs` may add settings,
    not change the connection).

    With link.mode=BIDIRECTIONAL the source must be a registered cluster (`source`, or the one
    `source_cluster_id` names), and the link's other half, the same name from `destination`
    into the source, is made with it: the same settings (but its prefix is
    `remote.cluster.link.prefix` when given), each half connecting with the other cluster's
    registered link principal.

    With `validate_link` (the default) the source must answer with the link's credentials and,
    if `source_cluster_id` is given, be that cluster; without it the id must be given.
    With `validate_only` nothing is saved and the unsaved link is returned.

    Confluent's recipe creates a bidirectional link on both clusters; Isthmus made both halves
    at the first create, so the second (same name, the other cluster as its source) is answered
    with the existing half, `made` False, when what it types agrees with it, else refused
    saying what differs; `cluster_link_id`, which Confluent's second create carries, must
    then be one of the link's halves' ids.
    """
    with audit.refusals(actor, "link.create", f"link {name} on {destination.name}"):
        source = _registered_source(configs, source, source_cluster_id)
        typed = configs
        existing = _existing_half(destination, name, source, typed, cluster_link_id)
        if existing is not None:
            if not validate_only:
                audit.record(
                    actor,
                    "link.create",
                    f"link {name} on {destination.name}",
                    message=_JOINED.format(source=_source_name(existing)),
                )
            return Creation(existing, made=False)
        if source is not None:
            configs = link_credentials.bound_to_cluster(source, typed)
            source_cluster_id = source.cluster_id
        clean = _checked(destination, name, configs)
        peer_clean = _peer_configs(destination, source, name, typed, clean)
        # Copied beside the cluster that opens the connections: the destination, or the
        # source of a source-initiated link; and its source is checked from there.
        inbound = clean.get("connection.mode") == "INBOUND"
        engine = source.engine if inbound and source else destination.engine
        source_cluster_id = _source_id(
            destination, clean, peer_clean, source_cluster_id, validate_link, engine, source
        )
        made = [_new_link(name, destination, source_cluster_id, clean, engine)]
        if peer_clean is not None:
            assert source is not None  # a bidirectional link's source is registered
            made.append(_new_link(name, source, destination.cluster_id, peer_clean, source.engine))
        if validate_only:
            return Creation(made[0], made=True)
        try:
            with transaction.atomic():
                for link in made:
                    link.save()
        except IntegrityError as exc:
            raise conflict(f"A cluster link named {name!r} already exists.") from exc
    for link in made:
        target = f"link {name} on {link.destination.name}"
        audit.record(actor, "link.create", target, after=links.snapshot(link))
        log.info(
            "Created cluster link %s from %s into %s",
            name,
            link.source_cluster_id,
            link.destination,
        )
    return Creation(made[0], made=True)


def join_as_source(
    actor: audit.Actor,
    source: KafkaCluster,
    name: str,
    configs: dict[str, str],
    destination_cluster_id: str | None,
    *,
    validate_only: bool = False,
) -> Creation:
    """The source half of a source-initiated link, created on `source` as Confluent's tools
    create it: link.mode=SOURCE, naming the destination (its id, its bootstrap.servers and
    credentials). Isthmus makes no second link: the destination half, made first on the
    destination (connection.mode=INBOUND), copies from now on, in the engine beside `source`,
    which opens every connection. The credentials typed here are checked against the cluster
    they name and not kept: the engine writes with the destination's registered ones. Made
    again, it is answered with the link, `made` False."""
    with audit.refusals(actor, "link.create", f"link {name} on {source.name}"):
        inbound = _mode(configs, "connection.mode") == "INBOUND"
        if _mode(configs, "link.mode") != "SOURCE" or inbound:
            raise ReplicationError(
                "A link created on its source, naming its destination, is the source half of a "
                "source-initiated link: give link.mode=SOURCE (connection.mode OUTBOUND, the "
                "default). Nothing was changed."
            )
        clean = link_config_validation.validate(configs)
        half = _inbound_half(source, name, destination_cluster_id)
        # From the source's zone, whose engine writes the destination.
        links.check_source(clean, half.destination.cluster_id, "destination", zone=half.engine)
        if validate_only:
            return Creation(half, made=half.waits_for_source_half)
        with transaction.atomic():
            # Locked as a config change locks it: a concurrent change of another config is
            # kept, and of two source halves made at once, one makes it.
            fresh = ClusterLink.objects.select_for_update().filter(pk=half.pk).first()
            if fresh is None:
                raise not_found(f"Cluster link {name!r} was deleted meanwhile.")
            half.configs = fresh.configs
            made = half.waits_for_source_half
            if made:
                before = links.snapshot(half)
                half.configs = {**half.configs, "remote.link.connection.mode": "OUTBOUND"}
                half.save(update_fields=["configs"])
                audit.record(
                    actor,
                    "link.create",
                    f"link {name} on {source.name}",
                    before=before,
                    after=links.snapshot(half),
                    message=f"The source half: {half.engine_label} copies the link from now on.",
                    in_change=True,
                )
    if not made:
        audit.record(actor, "link.create", f"link {name} on {source.name}", message=_SOURCE_JOINED)
        return Creation(half, made=False)
    log.info(
        "Made the source half of cluster link %s on %s: %s copies it into %s",
        name,
        source,
        half.engine_label,
        half.destination,
    )
    return Creation(half, made=True)


def source_halves(source: KafkaCluster) -> list[ClusterLink]:
    """The source halves made on `source`: the source-initiated links from it whose source
    half was made (Isthmus keeps each as its destination half; its pages show it on both
    clusters)."""
    found = links.list_links().filter(source_cluster_id=source.cluster_id)
    return [link for link in found if link.source_initiated and not link.waits_for_source_half]


def source_half(source: KafkaCluster, name: str) -> ClusterLink | None:
    """The source half named `name` made on `source`, or None."""
    return next((link for link in source_halves(source) if link.name == name), None)


def delete_source_half(
    actor: audit.Actor, source: KafkaCluster, name: str, *, validate_only: bool = False
) -> ClusterLink:
    """Delete a source-initiated link's source half, on `source`, as Confluent's tools delete
    it: the connection from the source ends, and its destination half, kept with its mirrors,
    waits for a source half again (copying nothing until one is made). With `validate_only`,
    only whether it could be."""
    target = f"link {name} on {source.name}"
    with audit.refusals(actor, "link.delete", target), transaction.atomic():
        half = source_half(source, name)
        if half is None:
            raise not_found(
                f"No source half of a link named {name!r} was made on {source.name}. List "
                "the links to see their names."
            )
        if validate_only:
            return half
        fresh = ClusterLink.objects.select_for_update().get(pk=half.pk)
        before = links.snapshot(fresh)
        fresh.configs = {
            k: v for k, v in fresh.configs.items() if k != "remote.link.connection.mode"
        }
        fresh.save(update_fields=["configs"])
        audit.record(
            actor,
            "link.delete",
            target,
            before=before,
            after=links.snapshot(fresh),
            message=(
                f"The source half was deleted: link {name} on {fresh.destination.name} waits "
                "for its source half again, and copies nothing until one is made."
            ),
            in_change=True,
        )
    log.info("Deleted the source half of cluster link %s on %s", name, source)
    return fresh


def _inbound_half(source: KafkaCluster, name: str, destination_id: str | None) -> ClusterLink:
    """The destination half (connection.mode=INBOUND) from `source` named `name` on the
    registered cluster `destination_id`, or why there is none."""
    destination = (
        KafkaCluster.objects.filter(cluster_id=destination_id).first() if destination_id else None
    )
    if destination is None:
        raise ReplicationError(
            "A source half names its destination, a registered cluster: give its id as "
            "destination_cluster_id (the tools' --cluster-id). Nothing was changed."
        )
    half = ClusterLink.objects.filter(destination=destination, name=name).first()
    if half is None or half.source_cluster_id != source.cluster_id or not half.source_initiated:
        raise conflict(
            f"No source-initiated link named {name!r} from {source.name} waits on "
            f"{destination.name}: create its destination half there first (link.mode="
            f"DESTINATION, connection.mode=INBOUND, source cluster {source.cluster_id}), then "
            "this one. Nothing was changed."
        )
    return half


_SOURCE_JOINED = (
    "Nothing new was made: the source half of this source-initiated link was made already."
)
_JOINED = (
    "Nothing new was made: this is the existing half, from {source}, of the bidirectional link "
    "Isthmus made on both clusters at its first create."
)


def _source_name(link: ClusterLink) -> str:
    source = KafkaCluster.objects.filter(cluster_id=link.source_cluster_id).first()
    return source.name if source else link.source_cluster_id


def joined_words(link: ClusterLink) -> str:
    """What a create that named an existing half is told (the API's header, the console's
    flash)."""
    if link.source_initiated:
        return f"Cluster link {link.name!r} into {link.destination.name}: {_SOURCE_JOINED}"
    return f"Cluster link {link.name!r} exists already on {link.destination.name}. " + (
        _JOINED.format(source=_source_name(link))
    )


def _existing_half(
    destination: KafkaCluster,
    name: str,
    source: KafkaCluster | None,
    typed: dict[str, str],
    cluster_link_id: str | None,
) -> ClusterLink | None:
    """The half of a bidirectional link this create names again, checked against what it
    types; None when the create is of a new link."""
    if cluster_link_id and not _bidirectional(typed):
        raise ReplicationError(_LINK_ID_WORDS)
    existing = ClusterLink.objects.filter(destination=destination, name=name).first()
    if existing is not None and source is not None and _bidirectional(typed):
        _check_same_half(existing, source, typed, cluster_link_id)
        return existing
    if cluster_link_id:
        raise ReplicationError(
            f"cluster_link_id names the first half of a bidirectional link, and no link "
            f"named {name!r} is on {destination.name} yet: create it without "
            "cluster_link_id (Isthmus makes both halves at once). Nothing was changed."
        )
    return None


_LINK_ID_WORDS = (
    "cluster_link_id is for the second half of a bidirectional link (link.mode=BIDIRECTIONAL); "
    "leave it out for any other link. Nothing was changed."
)


def _check_same_half(
    existing: ClusterLink,
    source: KafkaCluster,
    typed: dict[str, str],
    cluster_link_id: str | None,
) -> None:
    """Refused, saying what differs, unless `existing` is the half of a bidirectional link from
    `source` and every setting typed agrees with it (a setting not typed is the half's own)."""
    where = f"A cluster link named {existing.name!r} exists already on {existing.destination.name}"
    if existing.source_cluster_id != source.cluster_id:
        raise conflict(
            f"{where}, from cluster {existing.source_cluster_id}, not from {source.name} "
            f"({source.cluster_id}): choose another name, or delete that link first. "
            "Nothing was changed."
        )
    if existing.config("link.mode") != "BIDIRECTIONAL":
        raise conflict(
            f"{where}, a one-way link (link.mode {existing.config('link.mode')}) from "
            f"{source.name}: a link's mode cannot be changed; delete it and create it again "
            "with link.mode=BIDIRECTIONAL. Nothing was changed."
        )
    if cluster_link_id:
        halves = [
            existing,
            *ClusterLink.objects.filter(
                name=existing.name, destination__cluster_id=source.cluster_id
            ),
        ]
        if cluster_link_id not in {kafka_uuid(half.link_id) for half in halves}:
            raise conflict(
                f"{where}, from {source.name}, but its cluster_link_id is "
                f"{kafka_uuid(existing.link_id)}, not {cluster_link_id}: give the id a GET of "
                "the link on either cluster answers, or leave it out. Nothing was changed."
            )
    clean = link_config_validation.validate(link_credentials.bound_to_cluster(source, typed))
    differing = [
        f"{key} ({clean[key]!r} here, {existing.config(key)!r} on the existing half)"
        for key in sorted(typed)
        if key not in link_configs.CONNECTION_KEYS and clean.get(key) != existing.config(key)
    ]
    if differing:
        raise conflict(
            f"{where}: it is the other half of the bidirectional link from {source.name}, made "
            f"at the first create, but {', '.join(differing)} differ. Create it with the same "
            "values, or change them on the existing link (its configs). Nothing was changed."
        )


def _source_id(
    destination: KafkaCluster,
    clean: dict[str, str],
    peer_clean: dict[str, str] | None,
    source_cluster_id: str | None,
    validate_link: bool,
    engine: str,
    source: KafkaCluster | None,
) -> str:
    """The source's cluster id: asked of the source itself with the link's credentials, from
    the network zone of `engine`, which copies the link (and the other half's source,
    `destination`, with its own, from the zone of the registered `source`) when
    `validate_link`, else as given."""
    if validate_link:
        source_cluster_id = links.check_source(clean, source_cluster_id, zone=engine)
        if peer_clean is not None:
            assert source is not None  # a bidirectional link's source is registered
            links.check_source(peer_clean, destination.cluster_id, zone=source.engine)
    elif not source_cluster_id:
        raise ReplicationError("Without link validation the source cluster id must be given.")
    if source_cluster_id == destination.cluster_id:
        raise ReplicationError(
            f"The source is cluster {destination.name} itself; "
            "a link copies between two different clusters."
        )
    return source_cluster_id


def names_a_source_half(configs: dict[str, str], destination_cluster_id: str | None) -> bool:
    """Whether a create is a source-initiated link's source half (`join_as_source`): it names
    a destination, or says link.mode=SOURCE."""
    return bool(destination_cluster_id) or _mode(configs, "link.mode") == "SOURCE"


def _mode(configs: dict[str, str], key: str) -> str:
    return str(configs.get(key, "")).strip().upper()


def _bidirectional(configs: dict[str, str]) -> bool:
    return _mode(configs, "link.mode") == "BIDIRECTIONAL"


def _registered_source(
    configs: dict[str, str], source: KafkaCluster | None, cluster_id: str | None
) -> KafkaCluster | None:
    """The link's source as a registered cluster: `source`, else, for a link that must have
    one (bidirectional, or source-initiated), the one `cluster_id` names."""
    if _mode(configs, "link.mode") == "SOURCE":
        raise ReplicationError(_SOURCE_HALF_WORDS)
    inbound = _mode(configs, "connection.mode") == "INBOUND"
    if source is not None or not (inbound or _bidirectional(configs)):
        return source
    source = KafkaCluster.objects.filter(cluster_id=cluster_id).first() if cluster_id else None
    if source is None:
        why = (
            "A source-initiated link's destination half (connection.mode=INBOUND) is copied by "
            "the engine beside its source, which reads it with the source's registered link "
            "principal"
            if inbound
            else "A bidirectional link joins two registered clusters (each half reads the other "
            "with its registered link principal)"
        )
        raise ReplicationError(
            f"{why}: register the source cluster first, then give its id as the source cluster "
            "id. Nothing was changed."
        )
    return source


_SOURCE_HALF_WORDS = (
    "link.mode=SOURCE is the source half of a source-initiated link: create it on the source "
    "cluster naming the destination (destination_cluster_id; the tools' --cluster-id), after "
    "the destination half (link.mode=DESTINATION, connection.mode=INBOUND) on the destination. "
    "Nothing was changed."
)


def _peer_configs(
    destination: KafkaCluster,
    source: KafkaCluster | None,
    name: str,
    typed: dict[str, str],
    clean: dict[str, str],
) -> dict[str, str] | None:
    """The other half's configs, for a bidirectional link (else None): the same settings,
    connecting to `destination` with its registered link principal, but with the prefixes
    the other way round (its cluster.link.prefix is this half's remote.cluster.link.prefix)
    and so are the schema contexts (it syncs from the context this half syncs into)."""
    if clean.get("link.mode") != "BIDIRECTIONAL":
        return None
    assert source is not None  # a bidirectional link's source is registered (create_link)
    settings = {k: v for k, v in typed.items() if k not in link_configs.CONNECTION_KEYS}
    prefixes = ("cluster.link.prefix", "remote.cluster.link.prefix")
    mine, theirs = (settings.pop(k, None) for k in prefixes)
    for key, value in zip(prefixes, (theirs if theirs is not None else mine, mine), strict=True):
        if value is not None:
            settings[key] = value
    contexts = ("schema.context", "schema.source.context")
    into, out_of = (settings.pop(k, None) for k in contexts)
    for key, value in zip(contexts, (out_of, into), strict=True):
        if value is not None:
            settings[key] = value
    return _checked(source, name, link_credentials.bound_to_cluster(destination, settings))


def _new_link(
    name: str,
    destination: KafkaCluster,
    source_cluster_id: str,
    clean: dict[str, str],
    engine: str,
) -> ClusterLink:
    paused = clean.get("cluster.link.paused") == "true"
    link = ClusterLink(
        name=name,
        destination=destination,
        source_cluster_id=source_cluster_id,
        state=State.PAUSED if paused else State.ACTIVE,
        engine=engine,
    )
    link.set_configs(clean)
    return link


def _checked(destination: KafkaCluster, name: str, configs: dict[str, str]) -> dict[str, str]:
    """The new link's configs, normalised, once its name and configs are right; else every
    problem at once (FieldProblems: "name", "configs"), before the source is asked anything."""
    problems: dict[str, ReplicationError] = {}
    try:
        _check_new_name(destination, name)
    except ReplicationError as exc:
        problems["name"] = exc
    try:
        clean = link_config_validation.validate(configs)
        read_only = [k for k in clean if link_configs.KEYS[k].read_only]
        if read_only:
            raise ReplicationError(f"{', '.join(read_only)} is read-only: leave it out.")
    except ReplicationError as exc:
        problems["configs"] = exc
    if problems:
        raise FieldProblems(problems)
    return clean


def _check_new_name(destination: KafkaCluster, name: str) -> None:
    try:
        NAME_VALIDATOR(name)
    except ValidationError as exc:
        raise ReplicationError(f"Invalid link name {name!r}: {exc.messages[0]}") from exc
    if name == "-":
        raise ReplicationError("A link cannot be named '-': the API uses it for every link.")
    if ClusterLink.objects.filter(destination=destination, name=name).exists():
        raise conflict(f"A cluster link named {name!r} already exists on {destination.name}.")
