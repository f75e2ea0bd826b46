"""ACLs through the Kafka admin adapter: the filters that match one binding or every ACL on
some resources (`exact_filter`, `acl_filter`, `EVERY_ACL`), and `AclCalls`, `KafkaAdmin`'s calls
that create, delete and read ACLs and ask whether the brokers run an authorizer at all.
"""

from __future__ import annotations

from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    ResourcePatternType,
    ResourceType,
)

from .kafka_errors import AdminRequests, AuthorizerDisabled


def exact_filter(binding: AclBinding) -> AclBindingFilter:
    """The filter that matches `binding` alone (to delete exactly it)."""
    return AclBindingFilter(
        binding.restype,
        binding.name,
        binding.resource_pattern_type,
        binding.principal,
        binding.host,
        binding.operation,
        binding.permission_type,
    )


def acl_filter(
    resource_type: ResourceType = ResourceType.ANY,
    name: str | None = None,
    pattern: ResourcePatternType = ResourcePatternType.ANY,
) -> AclBindingFilter:
    """The filter of every ACL on resources of `resource_type` (named `name`, if given), of
    any principal, host, operation and permission."""
    # confluent-kafka's stubs want text for the name, principal and host; None matches any.
    return AclBindingFilter(
        resource_type,
        name,  # type: ignore[arg-type]
        pattern,
        None,  # type: ignore[arg-type]
        None,  # type: ignore[arg-type]
        AclOperation.ANY,
        AclPermissionType.ANY,
    )


EVERY_ACL = acl_filter()


class AclCalls(AdminRequests):
    """`KafkaAdmin`'s calls on ACLs."""

    def create_acls(self, bindings: list[AclBinding]) -> None:
        futures = self._client.create_acls(bindings, request_timeout=self.timeout)
        for future in futures.values():
            self._wait(future, "create ACLs")

    def delete_acls(self, filters: list[AclBindingFilter]) -> None:
        futures = self._client.delete_acls(filters, request_timeout=self.timeout)
        for future in futures.values():
            self._wait(future, "delete ACLs")

    def describe_acls(self, acl_filter: AclBindingFilter) -> list[AclBinding]:
        """The ACL bindings `acl_filter` matches."""
        future = self._client.describe_acls(acl_filter, request_timeout=self.timeout)
        return list(self._wait(future, "read the ACLs"))

    def authorizer_enabled(self) -> bool:
        """Whether the brokers run an authorizer (ACLs are enforced)."""
        try:
            self._wait(
                self._client.describe_acls(EVERY_ACL, request_timeout=self.timeout), "read the ACLs"
            )
        except AuthorizerDisabled:
            return False
        return True
