"""Cluster links on in-memory clusters: every operation and every refusal (the real source's id,
SASL logins and forced deletes on real brokers: tests/integration/test_links.py)."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from devstack import kafka
from replication.core.errors import ReplicationError
from replication.governance import audit
from replication.models import AuditEvent, ClusterLink, MirrorTopic
from replication.topics.link_availability import mark_unavailable
from replication.topics.link_creation import create_link
from replication.topics.links import (
    alter_link_configs,
    describe_link_configs,
    list_links,
    pause_link,
    resume_link,
)
from replication.topics.mirrors import create_mirror

ACTOR = audit.Actor.system("tests")


@pytest.mark.parametrize(
    "name,configs,expected",
    [
        ("..", {}, "Invalid link name"),
        ("has space", {}, "Invalid link name"),
        ("x" * 201, {}, "Invalid link name"),
        ("ok", {"no.such.key": "1"}, "Unknown link config 'no.such.key'. Valid link configs: "),
        ("ok", {"metadata.max.age.ms": "soon"}, "metadata.max.age.ms must be a whole number"),
        ("ok", {"mirror.start.offset.spec": "yesterday"}, "ISO-8601"),
        ("ok", {"cluster.link.prefix": "a/b"}, "cluster.link.prefix may hold only"),
        (
            "ok",
            {"topic.config.sync.include": "retention.ms,preallocat"},
            "never synced: preallocat",
        ),
        ("ok", {"security.protocol": "SASL_PLAINTEXT"}, "needs the link's credentials"),
        ("ok", {"link.mode": "SOURCE"}, "link.mode=SOURCE is the source half of a source-init"),
        ("ok", {"link.mode": "SIDEWAYS"}, "link.mode can only be DESTINATION or BIDIRECTIONAL"),
        ("ok", {"bootstrap.servers": "127.0.0.1:1"}, "cannot reach its source"),
    ],
)
def test_bad_links_are_refused_with_a_clear_message_and_nothing_saved(
    make_link, name, configs, expected
):
    with pytest.raises(ReplicationError) as refused:
        make_link(configs, name=name)
    assert expected in str(refused.value)
    assert not ClusterLink.objects.exists()
    assert AuditEvent.objects.get(action="link.create").result in ("refused", "failed")


def test_the_unknown_key_message_lists_every_valid_key(make_link):
    with pytest.raises(ReplicationError) as refused:
        make_link({"no.such.config": "true"})
    for key in ("bootstrap.servers", "metadata.max.age.ms", "cluster.link.retry.timeout.ms"):
        assert key in str(refused.value)


def test_link_names_are_unique_per_destination(make_link):
    first = make_link(name="twice")
    with pytest.raises(ReplicationError, match="already exists") as refused:
        make_link(name="twice")
    assert refused.value.status == 409
    assert [link.pk for link in ClusterLink.objects.all()] == [first.pk]


def test_a_link_to_itself_is_refused(registered_clusters):
    with pytest.raises(ReplicationError, match="two different clusters"):
        create_link(
            ACTOR,
            registered_clusters["destination"],
            "loop",
            {"bootstrap.servers": kafka.DESTINATION.bootstrap},
        )
    assert not ClusterLink.objects.exists()


def test_the_expected_source_cluster_id_is_checked(make_link, registered_clusters):
    with pytest.raises(ReplicationError, match="not the expected source cluster"):
        create_link(
            ACTOR,
            registered_clusters["destination"],
            "wrong-id",
            {"bootstrap.servers": kafka.SOURCE.bootstrap},
            source_cluster_id="AAAAAAAAAAAAAAAAAAAAAA",
        )
    assert not ClusterLink.objects.exists()


def test_validate_only_checks_everything_and_saves_nothing(registered_clusters):
    link = create_link(
        ACTOR,
        registered_clusters["destination"],
        "dry-run",
        {"bootstrap.servers": kafka.SOURCE.bootstrap},
        validate_only=True,
    )
    assert link.pk is None and link.source_cluster_id == registered_clusters["source"].cluster_id
    assert not ClusterLink.objects.exists()
    assert not AuditEvent.objects.filter(action="link.create").exists()  # a dry run is no change


def test_excluding_link_validation_needs_the_cluster_id_and_skips_the_connection(
    registered_clusters,
):
    destination = registered_clusters["destination"]
    unreachable = {"bootstrap.servers": "127.0.0.1:1"}
    with pytest.raises(ReplicationError, match="source cluster id must be given"):
        create_link(ACTOR, destination, "offline", unreachable, validate_link=False)
    assert not ClusterLink.objects.exists()
    link = create_link(
        ACTOR,
        destination,
        "offline",
        unreachable,
        validate_link=False,
        source_cluster_id="some-cluster-id",
    )
    assert link.pk and link.source_cluster_id == "some-cluster-id"


def test_describe_shows_defaults_and_set_values(make_link):
    link = make_link({"metadata.max.age.ms": "5000"})
    shown = {e.name: e for e in describe_link_configs(link)}
    assert (shown["metadata.max.age.ms"].value, shown["metadata.max.age.ms"].is_default) == (
        "5000",
        False,
    )
    assert shown["metadata.max.age.ms"].source == "DYNAMIC_CLUSTER_LINK_CONFIG"
    defaults = {
        "topic.config.sync.ms": "5000",
        "mirror.start.offset.spec": "earliest",
        "availability.check.ms": "60000",
        "availability.check.consecutive.failure.threshold": "5",
        "cluster.link.retry.timeout.ms": "300000",
        "cluster.link.paused": "false",
    }
    for name, value in defaults.items():
        assert (shown[name].value, shown[name].is_default) == (value, True), name


def test_altering_configs_sets_and_resets_them(make_link):
    link = make_link({"topic.config.sync.ms": "2000"})
    alter_link_configs(ACTOR, link, {"metadata.max.age.ms": "5000"}, ["topic.config.sync.ms"])
    link.refresh_from_db()
    assert link.configs["metadata.max.age.ms"] == "5000"
    assert link.config("topic.config.sync.ms") == "5000"  # back to the default
    event = AuditEvent.objects.get(action="link.alter_configs")
    assert event.before["configs"]["topic.config.sync.ms"] == "2000"
    assert "topic.config.sync.ms" not in event.after["configs"]


@pytest.mark.parametrize(
    "to_set,to_delete,expected",
    [
        (
            {"link.mode": "BIDIRECTIONAL"},
            [],
            "link.mode is set when the link is created and cannot be changed: delete the link "
            "and create it again with the link.mode you want",
        ),
        ({"cluster.link.prefix": "dc1."}, [], "cannot be changed"),
        ({}, ["bootstrap.servers"], "cannot be deleted"),
        ({}, ["nope"], "Unknown link config 'nope'"),
        ({"availability.check.ms": "0"}, [], "from 1 to 2147483647"),
        ({"bootstrap.servers": kafka.DESTINATION.bootstrap}, [], "not the expected source"),
        (
            {"metadata.max.age.ms": "5000"},
            ["metadata.max.age.ms"],
            "metadata.max.age.ms is both set and reset in one change",
        ),
    ],
)
def test_bad_config_changes_are_refused_and_change_nothing(make_link, to_set, to_delete, expected):
    link = make_link({"cluster.link.prefix": "dc0."})
    before = dict(link.configs)
    with pytest.raises(ReplicationError, match=expected):
        alter_link_configs(ACTOR, link, to_set, to_delete)
    link.refresh_from_db()
    assert link.configs == before


def test_validate_only_config_changes_change_nothing(make_link):
    link = make_link()
    alter_link_configs(ACTOR, link, {"metadata.max.age.ms": "5000"}, validate_only=True)
    link.refresh_from_db()
    assert "metadata.max.age.ms" not in link.configs
    assert not AuditEvent.objects.filter(action="link.alter_configs").exists()


def test_pausing_a_link_pauses_its_mirrors_and_resuming_brings_them_back(
    make_link, make_topic, topic_name
):
    link = make_link()
    make_topic(kafka.SOURCE, topic_name)
    make_topic(kafka.SOURCE, f"{topic_name}-2")
    mirror = create_mirror(ACTOR, link, topic_name)
    own_pause = create_mirror(ACTOR, link, f"{topic_name}-2")
    own_pause.state = MirrorTopic.State.PAUSED
    own_pause.paused = True
    own_pause.save()

    pause_link(ACTOR, link)
    mirror.refresh_from_db()
    own_pause.refresh_from_db()
    assert (link.state, mirror.state, own_pause.state) == ("PAUSED", "LINK_PAUSED", "PAUSED")
    assert link.config("cluster.link.paused") == "true"
    with pytest.raises(ReplicationError, match="already paused"):
        pause_link(ACTOR, link)

    resume_link(ACTOR, link)
    mirror.refresh_from_db()
    own_pause.refresh_from_db()
    assert (link.state, mirror.state, own_pause.state) == ("ACTIVE", "ACTIVE", "PAUSED")

    # A user's pause also survives an outage followed by a link pause and resume.
    assert mark_unavailable(link, "TIMEOUT_ERROR", "timed out")
    own_pause.refresh_from_db()
    assert own_pause.state == "SOURCE_UNAVAILABLE"
    link.refresh_from_db()
    with pytest.raises(ReplicationError, match="ACTIVE again by itself once the source answers"):
        resume_link(ACTOR, link)
    pause_link(ACTOR, link)
    resume_link(ACTOR, link)
    own_pause.refresh_from_db()
    assert own_pause.state == "PAUSED"
    with pytest.raises(ReplicationError) as refused:
        resume_link(ACTOR, link)
    assert str(refused.value) == (
        f"Cluster link {link.name!r} is ACTIVE; it cannot be resumed from that state. It is "
        "running already: there is nothing to resume."
    )


def test_cluster_link_paused_config_pauses_and_resumes_the_link(make_link):
    link = make_link()
    alter_link_configs(ACTOR, link, {"cluster.link.paused": "true"})
    link.refresh_from_db()
    assert link.state == "PAUSED"
    assert [e.value for e in describe_link_configs(link) if e.name == "cluster.link.paused"] == [
        "true"
    ]
    alter_link_configs(ACTOR, link, {}, ["cluster.link.paused"])
    link.refresh_from_db()
    assert link.state == "ACTIVE"
    # one change, one event each, the state change in its before and after
    events = list(AuditEvent.objects.filter(target=f"link {link.name}").order_by("id"))[-2:]
    assert [e.action for e in events] == ["link.alter_configs", "link.alter_configs"]
    assert [(e.before["state"], e.after["state"]) for e in events] == [
        ("ACTIVE", "PAUSED"),
        ("PAUSED", "ACTIVE"),
    ]


def test_list_links_includes_their_mirror_topics(make_link, make_topic, topic_name):
    link = make_link()
    make_topic(kafka.SOURCE, topic_name)
    create_mirror(ACTOR, link, topic_name)
    (listed,) = list_links(link.destination)
    assert listed.name == link.name
    assert [m.mirror_topic for m in listed.mirrors.all()] == [topic_name]


def test_the_api_link_list_asks_as_many_queries_for_many_bidirectional_links_as_for_one(
    registered_clusters, api, django_assert_max_num_queries
):
    destination = registered_clusters["destination"]

    def both_ways(name: str) -> None:
        source = registered_clusters["source"]
        create_link(ACTOR, destination, name, {"link.mode": "BIDIRECTIONAL"}, source=source)

    client, url = api("viewer"), f"/kafka/v3/clusters/{destination.cluster_id}/links"
    both_ways("one")
    with CaptureQueriesContext(connection) as one:
        listed = client.get(url).json()["data"]
    assert [(d["link_name"], d["other_half"]["cluster_name"]) for d in listed] == [
        ("one", "source")
    ]

    for name in ("two", "three", "four"):
        both_ways(name)
    with django_assert_max_num_queries(len(one)):
        listed = client.get(url).json()["data"]
    assert len(listed) == 4 and all(d["other_half"]["link_id"] for d in listed)
