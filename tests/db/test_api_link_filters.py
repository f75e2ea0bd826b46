"""The link filter configs (consumer.offset.group.filters, acl.filters,
auto.create.mirror.topics.filters) and their companion keys through the JSON API: Kafka REST v3's
link create with configs, one config set and reset, and configs:alter. The console stores the
JSON normalised and refuses a bad filter with a 400 in the v3 envelope naming the entry."""

from __future__ import annotations

import json

import pytest

from devstack import kafka
from replication.models import AuditEvent, ClusterLink
from tests import leftovers
from tests.integration import test_api
from tests.integration.test_api import assert_error, send

# A fixture shared with test_api: the destination's links URL (`api` is the package's).
links_url = test_api.links_url

GROUPS, ACLS, TOPICS = (
    "consumer.offset.group.filters",
    "acl.filters",
    "auto.create.mirror.topics.filters",
)
# Names in filters carry the session's marker, as any Kafka name of the tests: a filter
# selects names, and a syncer acting on one must only ever meet the tests' own.
APP = leftovers.unique_name("app")
ORDERS = leftovers.unique_name("orders")

# As a user may write them: any case, the 2020 names WHITELIST / BLACKLIST, blanks, defaults
# left out; and as the console stores them.
GIVEN = {
    GROUPS: f"""{{"groupFilters": [
        {{"name": " {APP}-", "patternType": "prefixed", "filterType": "whitelist"}},
        {{"name": "{APP}-test", "filterType": "BLACKLIST"}}
    ]}}""",
    ACLS: json.dumps(
        {
            "aclFilters": [
                {
                    "resourceFilter": {"resourceType": "TOPIC", "name": ORDERS},
                    "accessFilter": {
                        "principal": "User:bob",
                        "operation": "READ",
                        "permissionType": "Allow",
                    },
                }
            ]
        }
    ),
    TOPICS: json.dumps({"topicFilters": [{"name": ORDERS, "patternType": "PREFIXED"}]}),
}
STORED = {
    GROUPS: json.dumps(
        {
            "groupFilters": [
                {"name": f"{APP}-", "patternType": "PREFIXED", "filterType": "INCLUDE"},
                {"name": f"{APP}-test", "patternType": "LITERAL", "filterType": "EXCLUDE"},
            ]
        }
    ),
    ACLS: json.dumps(
        {
            "aclFilters": [
                {
                    "resourceFilter": {
                        "resourceType": "topic",
                        "patternType": "literal",
                        "name": ORDERS,
                    },
                    "accessFilter": {
                        "operation": "read",
                        "permissionType": "allow",
                        "principal": "User:bob",
                    },
                }
            ]
        }
    ),
    TOPICS: json.dumps(
        {"topicFilters": [{"name": ORDERS, "patternType": "PREFIXED", "filterType": "INCLUDE"}]}
    ),
}

# One wrong thing each, and what the answer must say: the key and the entry.
BAD = [
    pytest.param(
        GROUPS,
        '{"groupFilters": [{"name": "a"}, {"name": "b", "patternType": "FUZZY"}]}',
        [GROUPS, "entry 2 of groupFilters ('b')", "patternType 'FUZZY'", "LITERAL, PREFIXED"],
        id="group-pattern",
    ),
    pytest.param(
        GROUPS,
        '{"groupFilters": [{"name": "a", "colour": "red"}]}',
        [GROUPS, "entry 1 of groupFilters ('a')", "unknown key 'colour'"],
        id="group-unknown-key",
    ),
    pytest.param(
        GROUPS,
        '{"groupFilters": [ {"name": "a"},',
        [GROUPS, "is not valid JSON at line 1", '{"groupFilters": [ ... ]}'],
        id="group-not-json",
    ),
    pytest.param(
        TOPICS,
        '{"topicFilters": [{"name": "ok"}, {"patternType": "LITERAL"}]}',
        [TOPICS, "entry 2 of topicFilters: name is required"],
        id="topic-no-name",
    ),
    pytest.param(
        TOPICS,
        '{"groupFilters": [{"name": "a"}]}',
        [TOPICS, 'one key, "topicFilters"'],
        id="topic-wrong-top",
    ),
    pytest.param(
        ACLS,
        '{"aclFilters": [{"resourceFilter": {"resourceType": "topic"}, "accessFilter": '
        '{"operation": "read", "permissionType": "allow"}}, {"resourceFilter": '
        '{"resourceType": "topic"}, "accessFilter": {"operation": "fly", '
        '"permissionType": "allow"}}]}',
        [ACLS, "entry 2 of aclFilters, accessFilter: operation 'fly'"],
        id="acl-operation",
    ),
    pytest.param(
        ACLS,
        '{"aclFilters": [{"resourceFilter": {"resourceType": "topic"}, "accessFilter": '
        '{"principal": "bob", "operation": "read", "permissionType": "allow"}}]}',
        [ACLS, "entry 1 of aclFilters, accessFilter: principal 'bob' needs a type"],
        id="acl-principal",
    ),
    pytest.param(ACLS, '{"aclFilters": []}', [ACLS, "at least one filter"], id="acl-empty"),
]


def configs_of(client, links_url: str, link: str) -> dict[str, dict]:
    answer = client.get(f"{links_url}/{link}/configs")
    assert answer.status_code == 200, answer.content
    return {c["name"]: c for c in answer.json()["data"]}


def assert_stored(client, links_url: str, link: str, expected: dict[str, str]) -> None:
    """The link's configs, read back through the API (the list and each one alone), are
    `expected` where set."""
    listed = configs_of(client, links_url, link)
    for name, value in expected.items():
        one = client.get(f"{links_url}/{link}/configs/{name}").json()
        for entry in (listed[name], one):
            assert entry["value"] == value, (name, entry["value"])
            assert entry["is_default"] is False
            assert entry["source"] == "DYNAMIC_CLUSTER_LINK_CONFIG"
            assert entry["is_sensitive"] is False
    stored = ClusterLink.objects.get(name=link).configs
    assert {k: v for k, v in stored.items() if k in expected} == expected


def test_a_link_is_created_with_every_filter_and_its_keys_and_reads_them_back_normalised(
    api, links_url
):
    operator = api("operator")
    # Before: none of the new keys is set, and the filters have no default to show.
    configs = [
        {"name": "bootstrap.servers", "value": kafka.SOURCE.bootstrap},
        *({"name": k, "value": v} for k, v in GIVEN.items()),
        {"name": "consumer.offset.sync.enable", "value": "TRUE"},
        {"name": "consumer.offset.sync.ms", "value": "01000"},
        {"name": "acl.sync.enable", "value": "true"},
        {"name": "acl.sync.ms", "value": "2000"},
        {"name": "auto.create.mirror.topics.enable", "value": "False"},
    ]
    response = send(operator, "post", f"{links_url}?link_name=filtered", {"configs": configs})
    assert response.status_code == 204, response.content

    assert_stored(
        operator,
        links_url,
        "filtered",
        {
            **STORED,
            "consumer.offset.sync.enable": "true",
            "consumer.offset.sync.ms": "1000",
            "acl.sync.enable": "true",
            "acl.sync.ms": "2000",
            "auto.create.mirror.topics.enable": "false",
        },
    )
    # The stored JSON is real JSON holding what was given.
    stored = configs_of(operator, links_url, "filtered")
    assert json.loads(stored[GROUPS]["value"])["groupFilters"][1]["name"] == f"{APP}-test"
    # A link without them lists the keys with defaults, and not the filters (no default).
    plain = send(
        operator,
        "post",
        f"{links_url}?link_name=plain",
        {"configs": [{"name": "bootstrap.servers", "value": kafka.SOURCE.bootstrap}]},
    )
    assert plain.status_code == 204, plain.content
    defaults = configs_of(operator, links_url, "plain")
    assert not {GROUPS, ACLS, TOPICS} & set(defaults)
    assert defaults["consumer.offset.sync.ms"]["value"] == "30000"
    assert defaults["consumer.offset.sync.ms"]["is_default"] is True
    assert defaults["acl.sync.enable"]["value"] == "false"
    assert_error(
        operator.get(f"{links_url}/plain/configs/{GROUPS}"), 404, "is not set and has no default"
    )


def test_validate_only_checks_the_filters_and_creates_nothing(api, links_url):
    operator = api("operator")
    good = [
        {"name": "bootstrap.servers", "value": kafka.SOURCE.bootstrap},
        {"name": GROUPS, "value": GIVEN[GROUPS]},
    ]
    url = f"{links_url}?link_name=checked&validate_only=true"
    assert send(operator, "post", url, {"configs": good}).status_code == 204
    bad = [*good[:1], {"name": GROUPS, "value": '{"groupFilters": [{"name": ""}]}'}]
    assert_error(
        send(operator, "post", url, {"configs": bad}),
        400,
        "entry 1 of groupFilters: name is required",
    )
    assert not ClusterLink.objects.filter(name="checked").exists()
    # The dry run left no trace; the refusal is audited as one.
    assert not AuditEvent.objects.filter(action="link.create", result="ok").exists()


@pytest.mark.parametrize("key, value, fragments", BAD)
def test_a_bad_filter_at_creation_is_a_400_naming_the_entry_and_makes_no_link(
    api, links_url, key, value, fragments
):
    configs = [
        {"name": "bootstrap.servers", "value": kafka.SOURCE.bootstrap},
        {"name": key, "value": value},
    ]
    response = send(api("operator"), "post", f"{links_url}?link_name=refused", {"configs": configs})
    assert_error(response, 400, *fragments)
    assert not ClusterLink.objects.filter(name="refused").exists()


def test_keys_that_must_go_together_are_refused_at_creation(api, links_url):
    operator = api("operator")
    base = [{"name": "bootstrap.servers", "value": kafka.SOURCE.bootstrap}]
    cases = [
        ([("acl.sync.enable", "true")], "acl.sync.enable=true needs acl.filters"),
        (
            [("consumer.group.prefix.enable", "true")],
            "consumer.group.prefix.enable=true needs cluster.link.prefix",
        ),
        (
            [("acl.sync.enable", "true"), (ACLS, GIVEN[ACLS]), ("cluster.link.prefix", "p.")],
            "cannot be used on a link with cluster.link.prefix",
        ),
        ([("consumer.offset.sync.ms", "999")], "consumer.offset.sync.ms must be a whole number"),
    ]
    for extra, fragment in cases:
        configs = [*base, *({"name": k, "value": v} for k, v in extra)]
        response = send(operator, "post", f"{links_url}?link_name=apart", {"configs": configs})
        assert_error(response, 400, fragment)
    assert not ClusterLink.objects.filter(name="apart").exists()


def test_filters_are_set_and_reset_one_by_one(api, make_link, links_url):
    link = make_link()
    operator = api("operator")
    configs = f"{links_url}/{link.name}/configs"

    for key in (GROUPS, ACLS, TOPICS):
        response = send(operator, "put", f"{configs}/{key}", {"value": GIVEN[key]})
        assert response.status_code == 204, response.content
    assert_stored(operator, links_url, link.name, STORED)

    # A bad value is refused, naming the entry, and the stored one stays.
    bad = '{"groupFilters": [{"name": "x"}, {"name": "y", "filterType": "MAYBE"}]}'
    assert_error(
        send(operator, "put", f"{configs}/{GROUPS}", {"value": bad}),
        400,
        "entry 2 of groupFilters ('y'): filterType 'MAYBE'",
    )
    assert_stored(operator, links_url, link.name, STORED)

    assert operator.delete(f"{configs}/{TOPICS}").status_code == 204
    assert TOPICS not in configs_of(operator, links_url, link.name)
    assert TOPICS not in ClusterLink.objects.get(pk=link.pk).configs
    assert_error(operator.get(f"{configs}/{TOPICS}"), 404, "is not set and has no default")
    # Viewers read them and change nothing.
    viewer = api("viewer")
    assert viewer.get(f"{configs}/{GROUPS}").json()["value"] == STORED[GROUPS]
    assert_error(send(viewer, "put", f"{configs}/{GROUPS}", {"value": GIVEN[GROUPS]}), 403)


def test_filters_are_altered_in_batches_all_or_nothing(api, make_link, links_url):
    link = make_link()
    operator = api("operator")
    alter = f"{links_url}/{link.name}/configs:alter"
    batch = {
        "data": [
            {"name": GROUPS, "value": GIVEN[GROUPS], "operation": "SET"},
            {"name": ACLS, "value": GIVEN[ACLS]},  # SET is the default operation
            {"name": TOPICS, "value": GIVEN[TOPICS], "operation": "set"},
            {"name": "acl.sync.enable", "value": "true", "operation": "SET"},
            {"name": "consumer.offset.sync.ms", "value": "5000", "operation": "SET"},
        ]
    }
    assert send(operator, "put", f"{alter}?validate_only=true", batch).status_code == 204
    assert not {GROUPS, ACLS, TOPICS} & set(ClusterLink.objects.get(pk=link.pk).configs)

    assert send(operator, "put", alter, batch).status_code == 204
    after = {**STORED, "acl.sync.enable": "true", "consumer.offset.sync.ms": "5000"}
    assert_stored(operator, links_url, link.name, after)

    # One bad entry refuses the whole batch, naming the entry; the good change is not made.
    mixed = {
        "data": [
            {"name": "consumer.offset.sync.ms", "value": "9000", "operation": "SET"},
            {
                "name": TOPICS,
                "value": '{"topicFilters": [{"name": "a", "patternType": "REGEX"}]}',
                "operation": "SET",
            },
        ]
    }
    assert_error(
        send(operator, "put", alter, mixed),
        400,
        TOPICS,
        "entry 1 of topicFilters ('a'): patternType 'REGEX'",
    )
    assert_stored(operator, links_url, link.name, after)

    # Deleting acl.filters while acl.sync.enable=true is refused: the sync needs them.
    drop = {"data": [{"name": ACLS, "operation": "DELETE"}]}
    assert_error(send(operator, "put", alter, drop), 400, "acl.sync.enable=true needs acl.filters")
    both = {"data": [*drop["data"], {"name": "acl.sync.enable", "operation": "DELETE"}]}
    assert send(operator, "put", alter, both).status_code == 204
    left = ClusterLink.objects.get(pk=link.pk).configs
    assert ACLS not in left and "acl.sync.enable" not in left
    assert left[GROUPS] == STORED[GROUPS] and left[TOPICS] == STORED[TOPICS]
