"""Admin clients: for a registered cluster through its (privileged) client config, and for a
link's source through the link's own credentials."""

from __future__ import annotations

from django.conf import settings

from infra.kafka_admin import InvalidClientConfig, KafkaAdmin, KafkaAdminError

from .errors import ReplicationError, unavailable
from .models import ClusterLink, KafkaCluster


def source_admin(link: ClusterLink) -> KafkaAdmin:
    return connect(link.source_client_config())


def destination_admin(link: ClusterLink) -> KafkaAdmin:
    return cluster_admin(link.destination)


def cluster_admin(cluster: KafkaCluster) -> KafkaAdmin:
    return connect(cluster.connection_config())


def connect(config: dict[str, str]) -> KafkaAdmin:
    try:
        return KafkaAdmin(config, timeout=settings.KAFKA_ADMIN_TIMEOUT)
    except InvalidClientConfig as exc:
        raise ReplicationError(
            f"The client config is not valid: {exc}. "
            "Use confluent-kafka (librdkafka) property names, e.g. security.protocol, "
            "sasl.mechanism, sasl.username, sasl.password."
        ) from exc


def unreachable(side: str, exc: KafkaAdminError) -> ReplicationError:
    """A cluster did not answer: say which end of the link, and that nothing changed."""
    return unavailable(f"The {side} cluster did not answer. {exc} Nothing was changed.")
