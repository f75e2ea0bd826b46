"""Admin clients: for a registered cluster through its (privileged) client config, and for a
link's source through the link's own credentials. A cluster of another network zone (one
registered with an engine this process does not keep) is reached there, through the keeper of
that zone's engine (`zone_calls.py`), and so is a link's source when that engine copies it.

A client is kept per process and config and reused (a mirror page polled every 3 s, the beat's
syncers every few seconds, would otherwise each open new connections to every broker); one
unused for IDLE_S is dropped, which closes its connections, and so is the least recently used
beyond MAX_CLIENTS, and one whose request failed (the next call starts afresh, and its error
says what went wrong then). A changed config (new credentials, say) is a new key.
"""

from __future__ import annotations

import os
import threading
import time
from typing import cast

from django.conf import settings
from django.utils.module_loading import import_string

from infra.kafka_admin import KafkaAdmin
from infra.kafka_copy import Records
from infra.kafka_errors import InvalidClientConfig, KafkaAdminError
from replication.core.engine_names import is_ours
from replication.core.errors import ReplicationError, unavailable
from replication.kafka.zone_calls import Target, ZoneAdmin, ZoneRecords
from replication.models import ClusterLink, KafkaCluster


def source_admin(link: ClusterLink) -> KafkaAdmin:
    """A link's source, reached where its engine runs (which reads it)."""
    if _elsewhere(link.engine):
        return _as_admin(ZoneAdmin(Target(link.engine, source_of=link.pk)))
    return connect(link.source_client_config())


def destination_admin(link: ClusterLink) -> KafkaAdmin:
    return cluster_admin(link.destination)


def cluster_admin(cluster: KafkaCluster) -> KafkaAdmin:
    """A registered cluster, reached in its network zone."""
    if _elsewhere(cluster.engine):
        return _as_admin(ZoneAdmin(Target(cluster.engine, cluster=cluster.pk)))
    return connect(cluster.connection_config())


def records(cluster: KafkaCluster) -> Records:
    """Record-level calls on a registered cluster (each makes its own short-lived clients)."""
    if _elsewhere(cluster.engine):
        return _as_records(ZoneRecords(Target(cluster.engine, cluster=cluster.pk)))
    return import_string(settings.ISTHMUS_KAFKA_RECORDS)(cluster.connection_config())


def source_records(link: ClusterLink) -> Records:
    """Record-level calls on a link's source, through the link's own credentials."""
    if _elsewhere(link.engine):
        return _as_records(ZoneRecords(Target(link.engine, source_of=link.pk)))
    return import_string(settings.ISTHMUS_KAFKA_RECORDS)(link.source_client_config())


def _elsewhere(zone: str) -> bool:
    """Whether a cluster of network zone `zone` is reached from another host, its keeper's
    (zone_calls.py): not from the zone this process keeps the engine of."""
    return bool(zone) and not is_ours(zone)


def _as_admin(admin: ZoneAdmin) -> KafkaAdmin:
    return cast(KafkaAdmin, admin)  # it answers every KafkaAdmin call, made in its zone


def _as_records(found: ZoneRecords) -> Records:
    return cast(Records, found)


IDLE_S = 300
MAX_CLIENTS = 32
_clients: dict[tuple, tuple[KafkaAdmin, float]] = {}  # key: (pid, class, config, timeout)
_lock = threading.Lock()


def connect(config: dict[str, str], zone: str = "") -> KafkaAdmin:
    """The process's client for `config`, made on first use; for a cluster of network zone
    `zone`, its keeper's, there."""
    if _elsewhere(zone):
        return _as_admin(ZoneAdmin(Target(zone, config=config)))
    # The pid: a client's threads do not survive a fork, so a child never uses its parent's.
    key = (
        os.getpid(),
        settings.ISTHMUS_KAFKA_ADMIN,
        tuple(sorted(config.items())),
        settings.KAFKA_ADMIN_TIMEOUT,
    )
    now = time.monotonic()
    with _lock:
        for old in [k for k, (_, used) in _clients.items() if now - used > IDLE_S]:
            del _clients[old]
        if key in _clients and not _clients[key][0].failed:
            admin = _clients[key][0]
            admin.clear_client_errors()
        else:
            admin = _new(config)
        _clients[key] = (admin, now)
        while len(_clients) > MAX_CLIENTS:
            del _clients[min(_clients, key=lambda k: _clients[k][1])]
    return admin


def _new(config: dict[str, str]) -> KafkaAdmin:
    try:
        return import_string(settings.ISTHMUS_KAFKA_ADMIN)(
            config, timeout=settings.KAFKA_ADMIN_TIMEOUT
        )
    except InvalidClientConfig as exc:
        raise ReplicationError(
            f"The client config is not valid: {exc}. "
            "Use confluent-kafka (librdkafka) property names, e.g. security.protocol, "
            "sasl.mechanism, sasl.username, sasl.password."
        ) from exc


def unreachable(side: str, exc: KafkaAdminError) -> ReplicationError:
    """A cluster did not answer: say which end of the link, and that nothing changed."""
    return unavailable(f"The {side} cluster did not answer. {exc} Nothing was changed.")
