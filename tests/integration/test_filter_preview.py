"""The filter preview against the real source cluster, through a link's own connection: exactly
which consumer groups, topics (internal ones skipped) and ACLs include, exclude, prefixes and
Kafka's ACL filters select (refusals and bounds: tests/db/test_filter_preview.py).

Topics, groups and ACLs carry the session's marker (`unique_name`), so the filters below that
name them select nothing of other tests or sessions on the shared clusters, and the session's
sweep removes whatever a failed test leaves."""

import contextlib

import pytest
from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    ResourcePatternType,
    ResourceType,
)

from devstack import kafka
from infra.admin_client import AdminClient
from infra.kafka_acls import EVERY_ACL
from infra.kafka_admin import KafkaAdmin
from infra.processes import wait_for
from replication.core import filters
from replication.sync import filter_preview
from tests import leftovers
from tests.db.test_filter_preview import acl_filter, acl_filters, link, names, prefix, source_topics  # noqa: F401 (fixtures)
from tests.leftovers import admin_config

pytestmark = pytest.mark.integration


# Consumer groups. ------------------------------------------------------------------------------


@pytest.fixture
def source_admin():
    return AdminClient(admin_config(kafka.SOURCE))


@pytest.fixture
def source_groups(source_admin, source_topics, prefix):
    """Consumer groups on the source: each has committed offset 0 of one topic."""
    ids = [f"{prefix}-app-1", f"{prefix}-app-test", f"{prefix}-batch"]
    for group_id in ids:
        request = ConsumerGroupTopicPartitions(
            group_id, [TopicPartition(source_topics["orders"], 0, 0)]
        )
        for future in source_admin.alter_consumer_group_offsets([request]).values():
            future.result(timeout=30)
    yield dict(zip(["app-1", "app-test", "batch"], ids, strict=True))
    for future in source_admin.delete_consumer_groups(ids, request_timeout=30).values():
        with contextlib.suppress(Exception):  # the sweep removes what is left
            future.result(timeout=30)


@pytest.fixture
def source_acls(source_admin, source_topics, prefix):
    """ACLs on the source's topics (the sweep removes ACLs of marked topics)."""
    topic, literal, prefixed = (
        ResourceType.TOPIC,
        ResourcePatternType.LITERAL,
        (ResourcePatternType.PREFIXED),
    )
    read, write, describe = AclOperation.READ, AclOperation.WRITE, AclOperation.DESCRIBE
    allow, deny = AclPermissionType.ALLOW, AclPermissionType.DENY
    made = {
        "alice-orders": AclBinding(
            topic, source_topics["orders"], literal, "User:alice", "*", read, allow
        ),
        "bob-orders": AclBinding(
            topic, source_topics["orders"], literal, "User:bob", "*", write, allow
        ),
        "alice-pay": AclBinding(topic, f"{prefix}-pay", prefixed, "User:alice", "*", read, allow),
        "carol-other": AclBinding(
            topic, source_topics["other"], literal, "User:carol", "10.0.0.1", describe, deny
        ),
    }
    for future in source_admin.create_acls(list(made.values())).values():
        future.result(timeout=30)
    made_keys = {label: filters.binding_key(b) for label, b in made.items()}
    source = KafkaAdmin(admin_config(kafka.SOURCE))

    def seen() -> set[tuple]:
        return {filters.binding_key(b) for b in source.describe_acls(EVERY_ACL)}

    # (seen by the broker first: a preview reads them through a connection of its own)
    assert wait_for(lambda: set(made_keys.values()) <= seen(), 30)
    yield made_keys
    leftovers.delete_acls(kafka.SOURCE, list(made.values()))


def keys(preview: filter_preview.AclPreview, prefix: str) -> set[tuple]:
    """The selected ACLs of this test (by their names), as binding keys."""
    return {
        (
            a.resource_type,
            a.name,
            a.pattern_type,
            a.principal,
            a.host,
            a.operation,
            a.permission_type,
        )
        for a in preview.selected
        if prefix in a.name
    }


def test_groups_include_prefixed_and_exclude_wins(link, source_groups, prefix):
    g = source_groups
    cases = [
        ([(f"{prefix}-app-", "PREFIXED", "INCLUDE")], [g["app-1"], g["app-test"]]),
        (
            [(f"{prefix}-app-", "PREFIXED", "INCLUDE"), (g["app-test"], "LITERAL", "EXCLUDE")],
            [g["app-1"]],
        ),
        (
            [(prefix, "PREFIXED", "INCLUDE"), (f"{prefix}-app", "PREFIXED", "EXCLUDE")],
            [g["batch"]],
        ),
        (
            [(g["batch"], "LITERAL", "INCLUDE"), (g["app-1"], "LITERAL", "INCLUDE")],
            sorted([g["app-1"], g["batch"]]),
        ),
        ([(f"{prefix}-app", "LITERAL", "INCLUDE")], []),  # LITERAL is the whole name
        ([(prefix, "PREFIXED", "EXCLUDE")], []),  # no INCLUDE: nothing
    ]
    for entries, expected in cases:
        preview = filter_preview.preview_groups(link, names(*entries))
        assert preview.selected.shown == expected, entries
        assert preview.selected.count == len(expected)
        assert preview.on_source >= 3

    everything = filter_preview.preview_groups(
        link, names(("*", "LITERAL", "INCLUDE"), (g["batch"], "LITERAL", "EXCLUDE"))
    )
    assert everything.selected.count == everything.on_source - 1
    shown = set(everything.selected.shown)
    assert g["batch"] not in shown
    if everything.selected.count <= filter_preview.LIMIT:
        assert {g["app-1"], g["app-test"]} <= shown


# Topics. ---------------------------------------------------------------------------------------


def test_topics_selected_and_internal_ones_skipped(link, source_topics, prefix):
    t = source_topics
    preview = filter_preview.preview_topics(
        link, names((prefix, "PREFIXED", "INCLUDE"), (t["orders-tmp"], "LITERAL", "EXCLUDE"))
    )
    assert preview.selected.shown == sorted([t["orders"], t["payments"], t["other"]])
    assert preview.internal.count == 0 and preview.mirrored.count == 0

    preview = filter_preview.preview_topics(
        link,
        names(
            (f"__{prefix}", "PREFIXED", "INCLUDE"),
            (t["isthmus"], "LITERAL", "INCLUDE"),
            (t["orders"], "LITERAL", "INCLUDE"),
        ),
    )
    assert preview.selected.shown == [t["orders"]]
    assert preview.internal.shown == sorted([t["internal"], t["isthmus"]])

    everything = filter_preview.preview_topics(link, names(("*", "LITERAL", "INCLUDE")))
    assert everything.selected.count + everything.internal.count == everything.on_source
    assert "__consumer_offsets" in everything.internal.shown
    assert not any(filters.internal_topic(n) for n in everything.selected.shown)
    assert {t["internal"], t["isthmus"]} <= set(everything.internal.shown)


def test_acls_selected_by_kafkas_filter_semantics_on_the_source(link, source_acls, prefix):
    a = source_acls
    orders, pay = f"{prefix}-orders", f"{prefix}-pay"
    cases = [
        # a literal name and a principal: that one ACL
        (
            [
                acl_filter(
                    {"resourceType": "topic", "name": orders, "patternType": "literal"},
                    {"principal": "User:alice"},
                )
            ],
            {a["alice-orders"]},
        ),
        # the name only: every ACL on it
        (
            [acl_filter({"resourceType": "topic", "name": orders, "patternType": "literal"})],
            {a["alice-orders"], a["bob-orders"]},
        ),
        # a prefixed pattern: the ACLs with that prefix, not those the prefix would match
        (
            [acl_filter({"resourceType": "topic", "name": pay, "patternType": "prefixed"})],
            {a["alice-pay"]},
        ),
        (
            [
                acl_filter(
                    {"resourceType": "topic", "name": f"{prefix}-p", "patternType": "prefixed"}
                )
            ],
            set(),
        ),
        # match: every ACL that applies to the topic, the prefixed one included
        (
            [
                acl_filter(
                    {"resourceType": "topic", "name": f"{prefix}-payments", "patternType": "match"}
                )
            ],
            {a["alice-pay"]},
        ),
        # the access side: operation, permission, host
        (
            [acl_filter({"resourceType": "topic", "name": orders}, {"operation": "write"})],
            {a["bob-orders"]},
        ),
        (
            [
                acl_filter(
                    {"resourceType": "any"}, {"permissionType": "deny", "principal": "User:carol"}
                )
            ],
            {a["carol-other"]},
        ),
        (
            [
                acl_filter(
                    {"resourceType": "topic"}, {"host": "10.0.0.1", "principal": "User:carol"}
                )
            ],
            {a["carol-other"]},
        ),
        # another resource type: none of these topic ACLs
        ([acl_filter({"resourceType": "group", "name": orders, "patternType": "literal"})], set()),
    ]
    for entries, expected in cases:
        preview = filter_preview.preview_acls(link, acl_filters(*entries))
        assert keys(preview, prefix) == expected, entries

    # Several filters: what any selects, each ACL once, with each filter's own count.
    preview = filter_preview.preview_acls(
        link,
        acl_filters(
            acl_filter({"resourceType": "topic", "name": orders, "patternType": "literal"}),
            acl_filter(
                {"resourceType": "topic", "name": orders, "patternType": "literal"},
                {"principal": "User:alice"},
            ),
            acl_filter({"resourceType": "topic", "name": pay, "patternType": "prefixed"}),
        ),
    )
    assert keys(preview, prefix) == {a["alice-orders"], a["bob-orders"], a["alice-pay"]}
    assert preview.count == 3 and preview.per_filter == [2, 1, 1]
