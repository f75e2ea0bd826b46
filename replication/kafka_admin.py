"""A thin adapter over confluent-kafka's AdminClient that speaks in operator terms.

Every failure becomes a KafkaAdminError whose message says what went wrong and what to check.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)

logger = logging.getLogger("librdkafka")


class KafkaAdminError(Exception):
    """A cluster could not be reached or refused a request."""


@dataclass(frozen=True)
class ClusterDescription:
    cluster_id: str
    broker_count: int
    controller_id: int | None


_ANY_ACL = AclBindingFilter(
    ResourceType.ANY,
    None,
    ResourcePatternType.ANY,
    None,
    None,
    AclOperation.ANY,
    AclPermissionType.ANY,
)


class KafkaAdmin:
    def __init__(self, config: dict[str, str], timeout: float = 5.0):
        self.bootstrap = config.get("bootstrap.servers", "?")
        self.timeout = timeout
        self._client_errors: list[KafkaError] = []
        self._client = AdminClient(
            {
                **config,
                "socket.timeout.ms": int(timeout * 1000),
                "socket.connection.setup.timeout.ms": int(timeout * 1000),
                "logger": logger,
                "error_cb": self._client_errors.append,
            }
        )

    def _fail(self, doing: str, exc: Exception) -> KafkaAdminError:
        error = exc.args[0] if exc.args and isinstance(exc.args[0], KafkaError) else None
        # A failed login shows up on the request as a timeout; the client's own error says why.
        self._client.poll(0)
        auth_errors = [e for e in self._client_errors if e.code() == KafkaError._AUTHENTICATION]
        if auth_errors:
            error = auth_errors[-1]
        detail = error.str() if error else str(exc) or type(exc).__name__
        hint = ""
        if error and error.code() in (
            KafkaError._TRANSPORT,
            KafkaError._TIMED_OUT,
            KafkaError._ALL_BROKERS_DOWN,
        ):
            hint = " Check that the brokers are running and that bootstrap.servers is right."
        elif error and error.code() == KafkaError._AUTHENTICATION:
            hint = " Check the SASL/SSL settings and credentials in the client config."
        return KafkaAdminError(f"Could not {doing} at {self.bootstrap}: {detail}.{hint}")

    def describe_cluster(self) -> ClusterDescription:
        try:
            result = self._client.describe_cluster(request_timeout=self.timeout).result(
                timeout=self.timeout + 1
            )
        except (KafkaException, TimeoutError) as exc:
            raise self._fail("describe the cluster", exc) from exc
        controller = result.controller.id if result.controller else None
        return ClusterDescription(result.cluster_id, len(result.nodes), controller)

    def authorizer_enabled(self) -> bool:
        """Whether the brokers run an authorizer (ACLs are enforced)."""
        try:
            self._client.describe_acls(_ANY_ACL, request_timeout=self.timeout).result(
                timeout=self.timeout + 1
            )
            return True
        except KafkaException as exc:
            error = exc.args[0]
            if isinstance(error, KafkaError) and error.code() == KafkaError.SECURITY_DISABLED:
                return False
            raise self._fail("read the ACLs", exc) from exc
        except TimeoutError as exc:
            raise self._fail("read the ACLs", exc) from exc
