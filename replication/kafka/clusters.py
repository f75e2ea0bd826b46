"""The cluster registry: register Kafka clusters and observe their health."""

from __future__ import annotations

import logging
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from infra.client_config import librdkafka_config
from infra.kafka_errors import KafkaAdminError
from replication.core import crypto, link_config_validation, link_config_values, link_configs
from replication.core.errors import ReplicationError, conflict
from replication.governance import audit
from replication.kafka.connections import cluster_admin, connect
from replication.models import NAME_VALIDATOR, ClusterLink, KafkaCluster, MirrorTopic
from replication.models.clusters import ENGINE_VALIDATOR
from replication.schemas import schema_registries

log = logging.getLogger(__name__)
_INTEGER = re.compile(r"[-+]?[0-9]+")


@dataclass(frozen=True)
class ClusterHealth:
    cluster: KafkaCluster
    reachable: bool
    cluster_id: str | None = None
    broker_count: int | None = None
    controller_id: int | None = None
    authorizer_enabled: bool | None = None
    error: str = ""

    @property
    def id_matches(self) -> bool:
        return self.cluster_id == self.cluster.cluster_id

    @property
    def ordinary_bootstrap(self) -> str:
        """Where clients of no privilege reach it (the tutorials' and Kafka's own tools'
        address), when ISTHMUS_ORDINARY_BOOTSTRAP says; the console itself uses the
        registered bootstrap servers, with the registered credentials."""
        return settings.ISTHMUS_ORDINARY_BOOTSTRAP.get(self.cluster.name, "")

    @property
    def ok(self) -> bool:
        return self.reachable and self.id_matches

    def as_dict(self) -> dict:
        return {
            "ok": self.ok,
            "cluster_id": self.cluster_id,
            "brokers": self.broker_count,
            "authorizer_enabled": self.authorizer_enabled,
            "error": self.error,
        }


def parse_client_config(text: str) -> dict[str, str]:
    """Parse `key=value` lines into a client config (bootstrap.servers has its own field)."""
    try:
        config = parse_properties(text)
    except ValueError as exc:
        raise ReplicationError(f"{exc} of the client config is not 'key=value'.") from exc
    if "bootstrap.servers" in config:
        raise ReplicationError("Give bootstrap.servers in its own field, not in the client config.")
    for key, value in config.items():
        # librdkafka reads a number past 64 bits as -1 and then blames "-1": say what it was.
        # (Not for secrets: a password may be all digits, and is never echoed.)
        if (
            not crypto.is_sensitive(key)
            and _INTEGER.fullmatch(value)
            and (len(value.lstrip("+-")) > 19 or abs(int(value)) > link_config_values.JAVA_LONG_MAX)
        ):
            shown = value if len(value) <= 24 else f"{value[:20]}… ({len(value)} digits)"
            raise ReplicationError(
                f"{key}={shown} is beyond any number a client config takes (a 64-bit integer, "
                f"at most {link_config_values.JAVA_LONG_MAX}); give the value the property's own "
                "range allows."
            )
    return config


def parse_properties(text: str) -> dict[str, str]:
    """Parse `key=value` lines (blank lines and # comments ignored) into a dict.

    A bad line raises ValueError naming its number only: the line may hold a password.
    """
    config: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"Line {number}")
        config[key.strip()] = value.strip()
    return config


def register_cluster(
    actor: audit.Actor,
    name: str,
    bootstrap_servers: str,
    config: dict[str, str],
    link_config: dict[str, str] | None = None,
    registry: schema_registries.RegistryAccess | None = None,
    engine: str = "",
) -> KafkaCluster:
    """Register a reachable cluster under `name`, recording its cluster id; with `link_config`,
    the principal that links from it connect as (checked to reach the same cluster); with
    `registry`, its schema registry (checked to answer); with `engine`, the engine of its
    network zone, which copies the links it initiates."""
    target = f"cluster {name}"
    name_taken = f"A cluster named {name!r} is already registered; pick another name."
    with audit.refusals(actor, "cluster.register", target):
        try:
            NAME_VALIDATOR(name)
        except ValidationError as exc:
            raise ReplicationError(f"Invalid cluster name {name!r}: {exc.messages[0]}") from exc
        if KafkaCluster.objects.filter(name=name).exists():
            raise conflict(name_taken)
        try:
            ENGINE_VALIDATOR(engine)
        except ValidationError as exc:
            raise ReplicationError(f"Invalid engine name {engine!r}: {exc.messages[0]}") from exc
        bootstrap_servers = _checked_brokers(bootstrap_servers)
        cluster = KafkaCluster(
            name=name,
            bootstrap_servers=bootstrap_servers,
            cluster_id=_new_id(bootstrap_servers, config, engine),
            engine=engine,
        )
        cluster.set_client_config(config)
        if link_config:
            cluster.set_link_config(_checked_link_principal(cluster, link_config))
        if registry is not None:
            registry = schema_registries.checked(registry)
            schema_registries.keep(cluster, registry)
        try:
            with transaction.atomic():
                cluster.save()
        except IntegrityError as exc:  # registered by someone else while we connected
            same = KafkaCluster.objects.filter(cluster_id=cluster.cluster_id).first()
            raise conflict(_registered_as(same) if same else name_taken) from exc
        if registry is not None:
            schema_registries.store(cluster, registry.reading)
    audit.record(
        actor,
        "cluster.register",
        target,
        after={
            "bootstrap.servers": bootstrap_servers,
            "cluster_id": cluster.cluster_id,
            "config": dict(cluster.display_config()),
            "link_principal": cluster.link_principal,
            "schema_registry": schema_registries.described(cluster),
            "engine": engine,
        },
    )
    log.info("Registered cluster %s (id %s) at %s", name, cluster.cluster_id, bootstrap_servers)
    return cluster


def _checked_brokers(bootstrap_servers: str) -> str:
    bootstrap_servers = bootstrap_servers.strip()
    if not bootstrap_servers:
        raise ReplicationError("bootstrap.servers is required, e.g. broker1:9092,broker2:9092.")
    try:  # as Kafka reads it: librdkafka alone would take "localhost" as localhost:9092
        return link_config_values.check_brokers(bootstrap_servers)
    except ValueError as exc:
        raise ReplicationError(f"bootstrap.servers {exc}.") from exc


def _new_id(bootstrap_servers: str, config: dict[str, str], zone: str) -> str:
    """The id of the cluster at `bootstrap_servers` (reached in network zone `zone`), which no
    registration may hold yet."""
    try:
        admin = connect({"bootstrap.servers": bootstrap_servers, **config}, zone)
        found = admin.describe_cluster()
    except KafkaAdminError as exc:
        raise ReplicationError(f"{exc} Nothing was registered.") from exc
    same = KafkaCluster.objects.filter(cluster_id=found.cluster_id).first()
    if same is not None:
        raise conflict(_registered_as(same))
    return found.cluster_id


def _registered_as(cluster: KafkaCluster) -> str:
    return (
        f"This is cluster {cluster.cluster_id}, already registered as {cluster.name!r}: a "
        f"cluster is registered once, under one name. Use {cluster.name!r} (or delete it "
        "first to register the cluster under another name). Nothing was registered."
    )


def set_link_principal(
    actor: audit.Actor, cluster: KafkaCluster, link_config: dict[str, str]
) -> KafkaCluster:
    """Set the principal links from `cluster` connect as (its client config, no
    bootstrap.servers): checked to reach the registered cluster before it is kept."""
    target = f"cluster {cluster.name}"
    with audit.refusals(actor, "cluster.link_principal", target):
        before = cluster.link_principal
        cluster.set_link_config(_checked_link_principal(cluster, link_config))
        cluster.save(update_fields=["link_config", "link_secret_config", "updated_at"])
    audit.record(
        actor,
        "cluster.link_principal",
        target,
        before={"link_principal": before},
        after={"link_principal": cluster.link_principal},
    )
    return cluster


def _checked_link_principal(cluster: KafkaCluster, link_config: dict[str, str]) -> dict[str, str]:
    """The links' principal (link config names: security.protocol, sasl.*, ssl.*), checked to
    reach this very cluster at its registered address and to list its topics (what every link
    does first)."""
    if "bootstrap.servers" in link_config:
        raise ReplicationError(
            "The link credentials are used at the cluster's registered address only: leave "
            "bootstrap.servers out of them."
        )
    other = sorted(k for k in link_config if k not in link_configs.CONNECTION_KEYS)
    if other:
        raise ReplicationError(
            f"The link credentials take connection settings only (security.protocol, sasl.*, "
            f"ssl.*), not {', '.join(other)}."
        )
    try:
        clean = link_config_validation.validate(
            {"bootstrap.servers": cluster.bootstrap_servers, **link_config}
        )
    except ReplicationError as exc:
        raise ReplicationError(f"The link credentials: {exc}") from exc
    try:
        admin = connect(librdkafka_config(clean), cluster.engine)
        found = admin.describe_cluster().cluster_id
        admin.list_topic_names()
    except KafkaAdminError as exc:
        raise ReplicationError(
            f"The link credentials do not work on cluster {cluster.name}: {exc} "
            "Nothing was changed."
        ) from exc
    if found != cluster.cluster_id:
        raise conflict(
            f"With the link credentials, {cluster.bootstrap_servers} answers as cluster "
            f"{found}, not {cluster.name} ({cluster.cluster_id}). Nothing was changed."
        )
    del clean["bootstrap.servers"]
    return clean


def probe_cluster(cluster: KafkaCluster) -> ClusterHealth:
    """Ask the cluster itself who it is, how many brokers it has and whether ACLs apply."""
    try:
        admin = cluster_admin(cluster)
        description = admin.describe_cluster()
        authorizer = admin.authorizer_enabled()
    except (KafkaAdminError, ReplicationError, RuntimeError) as exc:  # RuntimeError: decryption
        return ClusterHealth(cluster, reachable=False, error=str(exc))
    health = ClusterHealth(
        cluster,
        reachable=True,
        cluster_id=description.cluster_id,
        broker_count=description.broker_count,
        controller_id=description.controller_id,
        authorizer_enabled=authorizer,
    )
    if not health.id_matches:
        return replace(
            health,
            error=(
                f"bootstrap.servers now reaches a different cluster (id {health.cluster_id}) "
                f"than the one registered as {cluster.name} (id {cluster.cluster_id}). "
                "Check bootstrap.servers before linking anything to it."
            ),
        )
    return health


def probe_clusters() -> list[ClusterHealth]:
    """Probe every registered cluster at once, so one unreachable cluster holds up no other."""
    clusters = list(KafkaCluster.objects.all())
    if not clusters:
        return []
    with ThreadPoolExecutor(max_workers=min(8, len(clusters))) as pool:
        return list(pool.map(probe_cluster, clusters))


@dataclass(frozen=True)
class TopicRow:
    name: str
    partitions: int
    mirror: MirrorTopic | None  # the mirror topic it is, on a destination


def cluster_topics(cluster: KafkaCluster) -> list[TopicRow]:
    """The cluster's topics by name, Kafka's internal ones (`__*`) left out, each with the
    mirror topic it is where it is one."""
    counts = cluster_admin(cluster).topic_partition_counts()
    mirrors = {
        m.mirror_topic: m
        for m in MirrorTopic.objects.filter(destination=cluster).select_related("link")
    }
    return [
        TopicRow(name, counts[name], mirrors.get(name))
        for name in sorted(counts)
        if not name.startswith("__")
    ]


def cluster_links(cluster: KafkaCluster) -> tuple[list[ClusterLink], list[ClusterLink]]:
    """The links into the cluster, and those whose source it is."""
    links = ClusterLink.objects.select_related("destination").order_by("name")
    return list(links.filter(destination=cluster)), list(
        links.filter(source_cluster_id=cluster.cluster_id)
    )
