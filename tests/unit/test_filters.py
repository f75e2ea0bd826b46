"""The link filters' JSON (Confluent's format): what they select, and how bad input is named."""

from __future__ import annotations

import json

import pytest
from confluent_kafka.admin import AclOperation, AclPermissionType, ResourcePatternType, ResourceType

from replication.core import filters, link_config_validation
from replication.core.errors import ReplicationError

GROUPS = json.dumps(
    {
        "groupFilters": [
            {"name": "*", "patternType": "LITERAL", "filterType": "INCLUDE"},
            {"name": "app-", "patternType": "PREFIXED", "filterType": "INCLUDE"},
            {"name": "app-test", "patternType": "LITERAL", "filterType": "EXCLUDE"},
            {"name": "tmp-", "patternType": "prefixed", "filterType": "exclude"},
        ]
    }
)


def test_exclude_wins_and_star_selects_every_other_name():
    parsed = filters.parse_names(GROUPS, filters.GROUPS)
    assert filters.selected(parsed, "billing")
    assert filters.selected(parsed, "app-orders")
    assert not filters.selected(parsed, "app-test")
    assert not filters.selected(parsed, "tmp-1")
    assert filters.selected(parsed, "app-test2")  # LITERAL excludes only the name itself


def test_a_name_no_filter_includes_is_not_selected():
    parsed = filters.parse_names(
        '{"topicFilters": [{"name": "orders", "patternType": "PREFIXED"}]}', filters.TOPICS
    )
    assert filters.selected(parsed, "orders.eu")
    assert not filters.selected(parsed, "payments")
    assert not filters.selected([], "orders")


def test_defaults_and_old_names_are_read_and_written_in_one_form():
    text = '{"groupFilters": [{"name": "a"}, {"name": "b", "filterType": "BLACKLIST"}]}'
    assert json.loads(filters.normalise(text, filters.GROUPS)) == {
        "groupFilters": [
            {"name": "a", "patternType": "LITERAL", "filterType": "INCLUDE"},
            {"name": "b", "patternType": "LITERAL", "filterType": "EXCLUDE"},
        ]
    }


def test_only_a_literal_include_of_the_name_itself_counts_as_naming_it():
    parsed = filters.parse_names(GROUPS, filters.GROUPS)
    assert not filters.literally_included(parsed, "billing")  # only through *
    assert filters.literally_included(
        filters.parse_names('{"topicFilters": [{"name": "orders"}]}', filters.TOPICS), "orders"
    )


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("{", "is not valid JSON at line 1 column 2"),
        ("[]", 'one key, "groupFilters"'),
        ('{"topicFilters": []}', 'one key, "groupFilters"'),
        (
            '{"groupFilters": [{"name": "a"}, {"patternType": "LITERAL"}]}',
            "entry 2 of groupFilters",
        ),
        (
            '{"groupFilters": [{"name": "a", "patternType": "REGEX"}]}',
            "entry 1 of groupFilters ('a'): patternType 'REGEX' is not one of",
        ),
        ('{"groupFilters": [{"name": "a", "filterType": "MAYBE"}]}', "filterType 'MAYBE'"),
        ('{"groupFilters": [{"name": "a", "colour": "red"}]}', "unknown key 'colour'"),
        ('{"groupFilters": ["a"]}', "entry 1 of groupFilters: must be an object"),
        ('{"groupFilters": [{"name": "  "}]}', "name is required"),
    ],
)
def test_bad_group_filters_name_the_entry(text, said):
    with pytest.raises(filters.FilterError, match=None) as caught:
        filters.parse_names(text, filters.GROUPS)
    assert said in str(caught.value)


def test_acl_filters_become_kafka_binding_filters_case_insensitively():
    text = json.dumps(
        {
            "aclFilters": [
                {
                    "resourceFilter": {
                        "resourceType": "TOPIC",
                        "name": "foo",
                        "patternType": "Prefixed",
                    },
                    "accessFilter": {
                        "principal": "User:Bob",
                        "host": "*",
                        "operation": "READ",
                        "permissionType": "allow",
                    },
                },
                {
                    "resourceFilter": {"resourceType": "any", "patternType": "any"},
                    "accessFilter": {"operation": "any", "permissionType": "any"},
                },
            ]
        }
    )
    first, everything = [f.binding_filter() for f in filters.parse_acls(text)]
    assert (first.restype, first.name, first.resource_pattern_type) == (
        ResourceType.TOPIC,
        "foo",
        ResourcePatternType.PREFIXED,
    )
    assert (first.principal, first.host, first.operation, first.permission_type) == (
        "User:Bob",
        "*",
        AclOperation.READ,
        AclPermissionType.ALLOW,
    )
    assert everything.name is None and everything.principal is None
    assert everything.restype == ResourceType.ANY and everything.operation == AclOperation.ANY
    assert filters.parse_acls(filters.normalise(text, filters.ACLS)) == filters.parse_acls(text)


@pytest.mark.parametrize(
    ("entry", "said"),
    [
        (
            {
                "resourceFilter": {"resourceType": "table"},
                "accessFilter": {"operation": "read", "permissionType": "allow"},
            },
            "resourceType 'table' is not one of",
        ),
        (
            {
                "resourceFilter": {"resourceType": "topic"},
                "accessFilter": {"operation": "steal", "permissionType": "allow"},
            },
            "operation 'steal'",
        ),
        (
            {"resourceFilter": {"resourceType": "topic"}, "accessFilter": {"operation": "read"}},
            "permissionType is required",
        ),
        (
            {
                "resourceFilter": {"resourceType": "topic"},
                "accessFilter": {
                    "principal": "bob",
                    "operation": "read",
                    "permissionType": "allow",
                },
            },
            "needs a type, e.g. User:alice",
        ),
        (
            {"resourceFilter": {"resourceType": "topic"}},
            "needs a resourceFilter object and an accessFilter object",
        ),
    ],
)
def test_bad_acl_filters_name_the_entry(entry, said):
    ok = {
        "resourceFilter": {"resourceType": "any", "patternType": "any"},
        "accessFilter": {"operation": "any", "permissionType": "any"},
    }
    with pytest.raises(filters.FilterError) as caught:
        filters.parse_acls(json.dumps({"aclFilters": [ok, entry]}))
    assert str(caught.value).startswith("entry 2 of aclFilters")
    assert said in str(caught.value)


def test_an_empty_acl_filter_list_is_refused():
    with pytest.raises(filters.FilterError, match="at least one filter"):
        filters.parse_acls('{"aclFilters": []}')


BASE = {"bootstrap.servers": "localhost:9092"}
ALL_ACLS = json.dumps(
    {
        "aclFilters": [
            {
                "resourceFilter": {"resourceType": "any", "patternType": "any"},
                "accessFilter": {"operation": "any", "permissionType": "any"},
            }
        ]
    }
)


def test_link_configs_store_filters_normalised_and_say_which_key_is_wrong():
    clean = link_config_validation.validate(
        {**BASE, "consumer.offset.group.filters": '{"groupFilters":[{"name":"*"}]}'}
    )
    assert (
        json.loads(clean["consumer.offset.group.filters"])["groupFilters"][0]["filterType"]
        == "INCLUDE"
    )
    with pytest.raises(
        ReplicationError, match=r"auto.create.mirror.topics.filters entry 1 of topicFilters"
    ):
        link_config_validation.validate(
            {**BASE, "auto.create.mirror.topics.filters": '{"topicFilters":[{"name":1}]}'}
        )


@pytest.mark.parametrize(
    ("configs", "said"),
    [
        ({"acl.sync.enable": "true"}, "acl.sync.enable=true needs acl.filters"),
        (
            {"acl.sync.enable": "true", "acl.filters": ALL_ACLS, "cluster.link.prefix": "west."},
            "cannot be used on a link with cluster.link.prefix",
        ),
        ({"consumer.group.prefix.enable": "true"}, "needs cluster.link.prefix"),
        (
            {"consumer.offset.sync.ms": "999"},
            "consumer.offset.sync.ms must be a whole number from 1000",
        ),
        ({"acl.sync.ms": "10"}, "acl.sync.ms must be a whole number from 1000"),
        (
            {"remote.cluster.link.prefix": "dc2."},
            "remote.cluster.link.prefix names the prefix of a bidirectional link's other half",
        ),
    ],
)
def test_sync_configs_that_do_not_fit_are_refused(configs, said):
    with pytest.raises(ReplicationError) as caught:
        link_config_validation.validate({**BASE, **configs})
    assert said in str(caught.value)


def test_sync_configs_that_fit_are_accepted():
    clean = link_config_validation.validate(
        {
            **BASE,
            "acl.sync.enable": "TRUE",
            "acl.filters": ALL_ACLS,
            "consumer.offset.sync.ms": "1000",
        }
    )
    assert clean["acl.sync.enable"] == "true"


@pytest.mark.parametrize(
    "topic",
    [
        "__consumer_offsets",
        "__transaction_state",
        "_isthmus-offset-translation",
        "_schemas",
        "_schema_encoders",
        "_confluent-command",
        "_confluent-metrics",
        "_confluent-ksql-default__command_topic",
        "mm2-offset-syncs.dc1.internal",
        "dc1.checkpoints.internal",
        "connect-cluster-internal",
    ],
)
def test_the_ecosystems_well_known_internal_topics_are_internal(topic):
    assert filters.internal_topic(topic)


@pytest.mark.parametrize("topic", ["orders", "schemas", "_orders", "confluent-orders", "internal"])
def test_a_users_topic_is_not_internal(topic):
    assert not filters.internal_topic(topic)
