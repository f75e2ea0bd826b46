"""A cluster's schema registry: where the schemas its records name by id are (Confluent's REST
API). Registered with the cluster or later, checked to answer as a registry before it is kept;
its password encrypted at rest, never shown, and used at the registered URL only.

How it answers is read in the background (`refresh_all`, the beat's, and at once from the
check whenever it is set) and kept in Redis: a page shows that reading (`latest`) and never
waits on a registry itself."""

from __future__ import annotations

import json
import logging
import re
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from urllib.parse import urlsplit

import redis

from infra.registry_http import SchemaRegistryError
from infra.schema_registry import SchemaRegistry
from replication.core import crypto, text
from replication.core.errors import ReplicationError
from replication.core.redis_channel import client
from replication.governance import audit
from replication.models import KafkaCluster

log = logging.getLogger(__name__)

MAX_PASSWORD = 1000
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")  # would break the Authorization header
# The longest a request to a registry may take, whole, when it is checked or read for a page's
# reading (the beat's worker, an admin's request).
PROBE_TIMEOUT_S = 5.0
# A reading nobody renews (the cluster was deleted, the beat stopped) is gone after a day.
KEEP_S = 24 * 3600


@dataclass(frozen=True)
class RegistryHealth:
    """How the registry at `url` answered at `at` (seconds since the epoch)."""

    url: str
    reachable: bool
    subjects: int = 0
    mode: str = ""
    error: str = ""
    at: float = 0.0

    @property
    def checked(self) -> datetime:
        return datetime.fromtimestamp(self.at, tz=UTC)


@dataclass(frozen=True)
class RegistryAccess:
    """A registry's URL and the credentials to use there (HTTP basic: a username and password,
    or an API key and secret). Once `checked`, `reading` is how the registry answered then."""

    url: str
    username: str = ""
    password: str = ""
    reading: RegistryHealth | None = field(default=None, compare=False, repr=False)


def checked(access: RegistryAccess) -> RegistryAccess:
    """`access` with its URL made plain, once the registry there answered Confluent's API with
    those credentials; a ReplicationError says what is wrong. An empty URL: no registry."""
    # Before stripping: a URL that ends in a line break and a line of its own would forge a
    # line of the log it is written to.
    found = text.control_characters(access.url)
    if found:
        raise ReplicationError(
            f"The schema registry URL holds control characters ({', '.join(found[:5])}), such "
            "as line breaks or terminal escapes: give the registry's address alone, e.g. "
            "http://registry.example.com:8081. Nothing was changed."
        )
    url = access.url.strip().rstrip("/")
    if text.control_characters(access.username) or _CONTROL.search(access.password):
        raise ReplicationError(
            "The schema registry username and password cannot hold line breaks or other "
            "control characters."
        )
    access = RegistryAccess(url, access.username.strip(), access.password)
    if not url:
        if access.username or access.password:
            raise ReplicationError(
                "A schema registry username or password needs the registry's URL: give it, or "
                "leave all three empty for no registry."
            )
        return RegistryAccess("")
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
    registry = SchemaRegistry(
        url, access.username or None, access.password or None, timeout=PROBE_TIMEOUT_S
    )
    try:
        reading = _read(registry)
    except SchemaRegistryError as exc:
        raise ReplicationError(
            f"{exc} Nothing was changed: check that {url} is a schema registry speaking "
            "Confluent's REST API."
        ) from exc
    return RegistryAccess(url, access.username, access.password, reading)


def keep(cluster: KafkaCluster, access: RegistryAccess) -> None:
    """Put checked `access` on the (unsaved) cluster, its password encrypted; once the cluster
    is saved, `store(cluster, access.reading)` keeps what the check read as the latest."""
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
        access = checked(access)
        keep(cluster, access)
        cluster.save(
            update_fields=[
                "schema_registry_url",
                "schema_registry_username",
                "schema_registry_password",
                "updated_at",
            ]
        )
    store(cluster, access.reading)  # the page shows it at once, not after the next beat
    after = described(cluster)
    audit.record(actor, "cluster.schema_registry", target, before=before, after=after)
    if after:
        log.info("Cluster %s: schema registry at %s", cluster.name, after["url"])
    else:
        log.info("Cluster %s: no schema registry now", cluster.name)
    return cluster


# --- how it answers, read in the background ------------------------------------------------


def _read(registry: SchemaRegistry) -> RegistryHealth:
    """How `registry` answers now; SchemaRegistryError if it does not as a registry."""
    subjects = len(registry.subjects())
    return RegistryHealth(registry.url, True, subjects, registry.mode(), at=time.time())


def probe(cluster: KafkaCluster) -> RegistryHealth | None:
    """How the cluster's registry answers now (None: it has none). Waits on the registry
    (PROBE_TIMEOUT_S a request at most): for the beat, never a page."""
    if not cluster.schema_registry_url:
        return None
    url = cluster.schema_registry_url
    try:
        registry = cluster.schema_registry()
    except RuntimeError as exc:  # its password cannot be decrypted
        return RegistryHealth(url, False, error=str(exc), at=time.time())
    assert registry is not None  # it has a URL
    registry.timeout = PROBE_TIMEOUT_S
    try:
        return _read(registry)
    except SchemaRegistryError as exc:
        return RegistryHealth(url, False, error=str(exc), at=time.time())


def _key(cluster: KafkaCluster) -> str:
    return f"isthmus:schema-registry:{cluster.pk}"


def store(cluster: KafkaCluster, health: RegistryHealth | None) -> None:
    """Keep `health` as the latest reading of the cluster's registry (None: it has none)."""
    try:
        if health is None:
            client().delete(_key(cluster))
        else:
            client().set(_key(cluster), json.dumps(asdict(health)), ex=KEEP_S)
    except redis.RedisError as exc:  # the next beat's reading is kept instead
        log.warning("Could not keep the reading of %s's schema registry: %s", cluster.name, exc)


def latest(cluster: KafkaCluster) -> RegistryHealth | None:
    """The latest reading of the cluster's registry: None when it has none, or none was taken
    yet of the registry it has now."""
    if not cluster.schema_registry_url:
        return None
    try:
        raw = client().get(_key(cluster))
    except redis.RedisError:
        return None
    if raw is None:
        return None
    try:
        found = RegistryHealth(**json.loads(raw))
    except (ValueError, TypeError):  # kept by another version: read afresh by the next beat
        return None
    # A reading of the registry the cluster had before is not this one's.
    return found if found.url == cluster.schema_registry_url.rstrip("/") else None


def refresh_all() -> None:
    """The beat's: read every cluster's registry at once (a registry gone quiet holds up no
    other) and keep the readings."""
    clusters = list(KafkaCluster.objects.exclude(schema_registry_url=""))
    if not clusters:
        return
    with ThreadPoolExecutor(max_workers=min(8, len(clusters))) as pool:
        readings = list(pool.map(probe, clusters))
    for cluster, health in zip(clusters, readings, strict=True):
        store(cluster, health)
