"""Creating a cluster link: its name and configs checked, its source asked with the link's
credentials, and for link.mode=BIDIRECTIONAL its other half made with it (the same name, from
the destination into the source, each half with the other cluster's link principal)."""

from __future__ import annotations

import logging

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from replication.core import link_config_validation, link_configs, link_credentials
from replication.core.errors import FieldProblems, ReplicationError, conflict
from replication.governance import audit
from replication.models import NAME_VALIDATOR, ClusterLink, KafkaCluster
from replication.topics import links

log = logging.getLogger(__name__)

State = ClusterLink.State


def create_link(
    actor: audit.Actor,
    destination: KafkaCluster,
    name: str,
    configs: dict[str, str],
    *,
    source_cluster_id: str | None = None,
    validate_only: bool = False,
    validate_link: bool = True,
    source: KafkaCluster | None = None,
) -> ClusterLink:
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
    """
    with audit.refusals(actor, "link.create", f"link {name} on {destination.name}"):
        if source is None and _bidirectional(configs):
            source = _registered_source(source_cluster_id)
        typed = configs
        if source is not None:
            configs = link_credentials.bound_to_cluster(source, typed)
            source_cluster_id = source.cluster_id
        clean = _checked(destination, name, configs)
        peer_clean = _peer_configs(destination, source, name, typed, clean)
        source_cluster_id = _source_id(
            destination, clean, peer_clean, source_cluster_id, validate_link
        )
        made = [_new_link(name, destination, source_cluster_id, clean)]
        if peer_clean is not None:
            assert source is not None  # a bidirectional link's source is registered
            made.append(_new_link(name, source, destination.cluster_id, peer_clean))
        if validate_only:
            return made[0]
        try:
            with transaction.atomic():
                for link in made:
                    link.save()
        except IntegrityError as exc:
            raise conflict(f"A cluster link named {name!r} already exists.") from exc
    for link in made:
        target = f"link {name} on {link.destination.name}"
        audit.record(actor, "link.create", target, after=links.snapshot(link))
        log.info("Created cluster link %s from %s into %s", name, link.source_cluster_id, link)
    return made[0]


def _source_id(
    destination: KafkaCluster,
    clean: dict[str, str],
    peer_clean: dict[str, str] | None,
    source_cluster_id: str | None,
    validate_link: bool,
) -> str:
    """The source's cluster id: asked of the source itself with the link's credentials (and
    the other half's source, `destination`, with its own) when `validate_link`, else as given."""
    if validate_link:
        source_cluster_id = links.check_source(clean, source_cluster_id)
        if peer_clean is not None:
            links.check_source(peer_clean, destination.cluster_id)
    elif not source_cluster_id:
        raise ReplicationError("Without link validation the source cluster id must be given.")
    if source_cluster_id == destination.cluster_id:
        raise ReplicationError(
            f"The source is cluster {destination.name} itself; "
            "a link copies between two different clusters."
        )
    return source_cluster_id


def _bidirectional(configs: dict[str, str]) -> bool:
    return str(configs.get("link.mode", "")).strip().upper() == "BIDIRECTIONAL"


def _registered_source(cluster_id: str | None) -> KafkaCluster:
    source = KafkaCluster.objects.filter(cluster_id=cluster_id).first() if cluster_id else None
    if source is None:
        raise ReplicationError(
            "A bidirectional link joins two registered clusters (each half reads the other "
            "with its registered link principal): register the other cluster first, then give "
            "its id as the source cluster id. Nothing was changed."
        )
    return source


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
    name: str, destination: KafkaCluster, source_cluster_id: str, clean: dict[str, str]
) -> ClusterLink:
    paused = clean.get("cluster.link.paused") == "true"
    link = ClusterLink(
        name=name,
        destination=destination,
        source_cluster_id=source_cluster_id,
        state=State.PAUSED if paused else State.ACTIVE,
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
