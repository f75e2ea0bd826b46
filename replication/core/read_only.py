"""Read-only mirror topics, enforced by the destination broker with ACLs (docs/user-guide.md, "What
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

from infra.kafka_admin import KafkaAdmin
from infra.kafka_errors import AuthorizerDisabled, KafkaAdminError, TopicNotFound
from infra.processes import wait_for

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


# How long a change waits to be in force: the broker applies an ACL change shortly after the
# controller answered for it, and answers DescribeAcls from what it applies.
APPLIED_S = 10


def ensure_links_topic(
    admin: KafkaAdmin, topic: str, partitions: int, configs: dict[str, str]
) -> None:
    """A topic of Isthmus's own on a destination (offset translation, flow progress), written
    only by links: made read-only, then made, unless it exists. Raises KafkaAdminError when the
    cluster does not answer."""
    try:
        admin.describe_topic(topic)
        return
    except TopicNotFound:
        pass
    try:
        enforce(admin, topic)
        admin.create_topic(topic, partitions, None, configs)
    except KafkaAdminError as exc:
        if "already exists" not in str(exc):
            raise


def enforce(admin: KafkaAdmin, topic: str) -> bool:
    """Make `topic` read-only, and return once the broker enforces it; False when the cluster
    has no authorizer to enforce it."""
    try:
        admin.create_acls(bindings(topic))
    except AuthorizerDisabled:
        return False
    wait_for(lambda: complete(admin, topic), APPLIED_S, 0.05)
    return True


def enforce_all(admin: KafkaAdmin, topics: Collection[str]) -> bool:
    """`enforce` for every topic of `topics`, in one request, and one read a poll until the
    broker enforces them all."""
    if not topics:
        return True
    try:
        admin.create_acls([b for topic in topics for b in bindings(topic)])
    except AuthorizerDisabled:
        return False
    wait_for(
        lambda: all(p >= frozenset(_RULES) for p in present_all(admin, topics).values()),
        APPLIED_S,
        0.05,
    )
    return True


def present_all(admin: KafkaAdmin, topics: Collection[str]) -> dict[str, frozenset[Rule]]:
    """`present` for each of `topics`, in one request."""
    try:
        found = admin.describe_acls(_filter(None))
    except AuthorizerDisabled:
        found = []
    rules: dict[str, set[Rule]] = {topic: set() for topic in topics}
    for b in found:
        if b.name in rules and (b.operation, b.permission_type) in _RULES:
            # confluent-kafka's stubs allow text or a number; a binding holds the enums.
            rules[b.name].add((b.operation, b.permission_type))  # type: ignore[arg-type]
    return {topic: frozenset(held) for topic, held in rules.items()}


def _filter(topic: str | None) -> AclBindingFilter:
    """The read-only rules' filter: of `topic`, or (None) of every topic."""
    return AclBindingFilter(
        ResourceType.TOPIC,
        topic,  # type: ignore[arg-type]  # the stubs want text; None matches every topic
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
    # confluent-kafka's stubs allow text or a number; a binding holds the enums.
    return frozenset((b.operation, b.permission_type) for b in found) & frozenset(_RULES)  # type: ignore[return-value]


def complete(admin: KafkaAdmin, topic: str) -> bool:
    """Whether `topic` has every read-only rule (True too when there is no authorizer)."""
    try:
        found = admin.describe_acls(_filter(topic))
    except AuthorizerDisabled:
        return True
    return frozenset(_RULES) <= {(b.operation, b.permission_type) for b in found}


def _rule_filters(topic: str, keep: Collection[Rule] = ()) -> list[AclBindingFilter]:
    return [
        AclBindingFilter(
            ResourceType.TOPIC, topic, ResourcePatternType.LITERAL, "User:*", "*", op, permission
        )
        for op, permission in _RULES
        if (op, permission) not in keep
    ]


def lift(admin: KafkaAdmin, topic: str, keep: Collection[Rule] = ()) -> None:
    """Remove the read-only ACLs of `topic` (and only those), but the rules in `keep`."""
    filters = _rule_filters(topic, keep)
    if not filters:
        return
    with contextlib.suppress(AuthorizerDisabled):
        admin.delete_acls(filters)
        # Back once the broker no longer applies them: a client told the topic is writable
        # must find it so.
        lifted = frozenset(_RULES) - frozenset(keep)
        wait_for(lambda: not present(admin, topic) & lifted, APPLIED_S, 0.05)


def lift_all(admin: KafkaAdmin, topics: Collection[str]) -> None:
    """Remove the read-only ACLs of each of `topics` in one request (a bulk failover's), and
    return once the broker applies none of them any more."""
    if not topics:
        return
    names = set(topics)

    def none_left() -> bool:
        # One read of every User:* rule on literal topic names, for all of them at once.
        found = admin.describe_acls(_filter(None))
        return not any(
            b.name in names and (b.operation, b.permission_type) in _RULES for b in found
        )

    with contextlib.suppress(AuthorizerDisabled):
        admin.delete_acls([f for topic in topics for f in _rule_filters(topic)])
        wait_for(none_left, APPLIED_S, 0.05)
