"""Read-only mirror topics, enforced by the destination broker with ACLs (README, "What
`make demo` starts").

Everyone may read a mirror; no one but the link's privileged principal (a super user, to whom
ACLs do not apply) may write to it, change its configs or add partitions to it. The rules are
DENY rules for `User:*`, which win over any ALLOW (an ACL synced from the source, say).
"""

from __future__ import annotations

import contextlib
from collections.abc import Collection

from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    ResourcePatternType,
    ResourceType,
)

from infra.kafka_admin import AuthorizerDisabled, KafkaAdmin

Rule = tuple[AclOperation, AclPermissionType]

_RULES: list[Rule] = [
    (AclOperation.READ, AclPermissionType.ALLOW),
    (AclOperation.DESCRIBE, AclPermissionType.ALLOW),
    (AclOperation.DESCRIBE_CONFIGS, AclPermissionType.ALLOW),
    (AclOperation.WRITE, AclPermissionType.DENY),
    (AclOperation.ALTER_CONFIGS, AclPermissionType.DENY),
    (AclOperation.ALTER, AclPermissionType.DENY),  # adding partitions (CreatePartitions)
]


def bindings(topic: str) -> list[AclBinding]:
    return [
        AclBinding(
            ResourceType.TOPIC, topic, ResourcePatternType.LITERAL, "User:*", "*", op, permission
        )
        for op, permission in _RULES
    ]


def enforce(admin: KafkaAdmin, topic: str) -> bool:
    """Make `topic` read-only; False when the cluster has no authorizer to enforce it."""
    try:
        admin.create_acls(bindings(topic))
    except AuthorizerDisabled:
        return False
    return True


def _filter(topic: str) -> AclBindingFilter:
    return AclBindingFilter(
        ResourceType.TOPIC,
        topic,
        ResourcePatternType.LITERAL,
        "User:*",
        "*",
        AclOperation.ANY,
        AclPermissionType.ANY,
    )


def present(admin: KafkaAdmin, topic: str) -> frozenset[Rule]:
    """Which of the read-only rules `topic` has now (none when there is no authorizer)."""
    try:
        found = admin.describe_acls(_filter(topic))
    except AuthorizerDisabled:
        return frozenset()
    return frozenset((b.operation, b.permission_type) for b in found) & frozenset(_RULES)


def complete(admin: KafkaAdmin, topic: str) -> bool:
    """Whether `topic` has every read-only rule (True too when there is no authorizer)."""
    try:
        found = admin.describe_acls(_filter(topic))
    except AuthorizerDisabled:
        return True
    return frozenset(_RULES) <= {(b.operation, b.permission_type) for b in found}


def lift(admin: KafkaAdmin, topic: str, keep: Collection[Rule] = ()) -> None:
    """Remove the read-only ACLs of `topic` (and only those), but the rules in `keep`."""
    filters = [
        AclBindingFilter(
            ResourceType.TOPIC, topic, ResourcePatternType.LITERAL, "User:*", "*", op, permission
        )
        for op, permission in _RULES
        if (op, permission) not in keep
    ]
    if not filters:
        return
    with contextlib.suppress(AuthorizerDisabled):
        admin.delete_acls(filters)
