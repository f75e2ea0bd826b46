"""A cluster's schema registry: where the schemas its records name by id are (Confluent's REST
API). Registered with the cluster or later, checked to answer as a registry before it is kept;
its password encrypted at rest, never shown, and used at the registered URL only."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from infra.schema_registry import SchemaRegistry, SchemaRegistryError

from . import audit, crypto
from .errors import ReplicationError
from .models import KafkaCluster

log = logging.getLogger(__name__)

MAX_PASSWORD = 1000
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")  # would break the Authorization header


@dataclass(frozen=True)
class RegistryAccess:
    """A registry's URL and the credentials to use there (HTTP basic: a username and password,
    or an API key and secret)."""

    url: str
    username: str = ""
    password: str = ""


def checked(access: RegistryAccess) -> RegistryAccess:
    """`access` with its URL made plain, once the registry there answered Confluent's API with
    those credentials; a ReplicationError says what is wrong. An empty URL: no registry."""
    url = access.url.strip().rstrip("/")
    if not url:
        if access.username or access.password:
            raise ReplicationError(
                "A schema registry username or password needs the registry's URL: give it, or "
                "leave all three empty for no registry."
            )
        return RegistryAccess("")
    if any(_CONTROL.search(text) for text in (access.username, access.password)):
        raise ReplicationError(
            "The schema registry username and password cannot hold line breaks or other "
            "control characters."
        )
    if len(access.password) > MAX_PASSWORD:
        raise ReplicationError(
            f"The schema registry password is longer than {MAX_PASSWORD} characters."
        )
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ReplicationError(
            f"The schema registry URL {url!r} is not an http:// or https:// address, e.g. "
            "http://registry.example.com:8081."
        )
    if parts.username or parts.password or parts.query or parts.fragment:
        raise ReplicationError(
            "Give the schema registry URL without credentials, query or fragment, and the "
            "credentials in their own fields."
        )
    if access.password and not access.username:
        raise ReplicationError("A schema registry password needs its username (or API key).")
    client = SchemaRegistry(url, access.username or None, access.password or None, timeout=5)
    try:
        client.subjects()
        client.mode()
    except SchemaRegistryError as exc:
        raise ReplicationError(
            f"{exc} Nothing was changed: check that {url} is a schema registry speaking "
            "Confluent's REST API."
        ) from exc
    return RegistryAccess(url, access.username, access.password)


def keep(cluster: KafkaCluster, access: RegistryAccess) -> None:
    """Put checked `access` on the (unsaved) cluster, its password encrypted."""
    cluster.schema_registry_url = access.url
    cluster.schema_registry_username = access.username if access.url else ""
    cluster.schema_registry_password = (
        crypto.encrypt(access.password) if access.url and access.password else ""
    )


def described(cluster: KafkaCluster) -> dict[str, str]:
    """What the audit trail and pages show of the cluster's registry (never the password)."""
    if not cluster.schema_registry_url:
        return {}
    shown = {"url": cluster.schema_registry_url}
    if cluster.schema_registry_username:
        shown["username"] = cluster.schema_registry_username
    if cluster.schema_registry_password:
        shown["password"] = crypto.SENSITIVE_MASK
    return shown


def set_schema_registry(
    actor: audit.Actor, cluster: KafkaCluster, access: RegistryAccess
) -> KafkaCluster:
    """Set (or, with an empty URL, remove) the cluster's schema registry."""
    target = f"cluster {cluster.name}"
    with audit.refusals(actor, "cluster.schema_registry", target):
        before = described(cluster)
        keep(cluster, checked(access))
        cluster.save(
            update_fields=[
                "schema_registry_url",
                "schema_registry_username",
                "schema_registry_password",
                "updated_at",
            ]
        )
    after = described(cluster)
    audit.record(actor, "cluster.schema_registry", target, before=before, after=after)
    if after:
        log.info("Cluster %s: schema registry at %s", cluster.name, after["url"])
    else:
        log.info("Cluster %s: no schema registry now", cluster.name)
    return cluster


@dataclass(frozen=True)
class RegistryHealth:
    url: str
    reachable: bool
    subjects: int = 0
    mode: str = ""
    error: str = ""


def probe(cluster: KafkaCluster) -> RegistryHealth | None:
    """How the cluster's registry answers now (None: it has none)."""
    client = cluster.schema_registry()
    if client is None:
        return None
    client.timeout = 3
    try:
        return RegistryHealth(client.url, True, len(client.subjects()), client.mode())
    except SchemaRegistryError as exc:
        return RegistryHealth(client.url, False, error=str(exc))
