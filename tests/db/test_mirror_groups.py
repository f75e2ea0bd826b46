"""A mirror's consumer groups section (replication.topics.mirror_groups, the mirror page's
section loaded on its own), on in-memory clusters: the groups on each cluster that committed
offsets on the mirror's topic there, their lag there, what offset sync does with each (the same
answer as the approver's plan: replication.topics.consumer_groups), and a cluster that does not
answer, or that the probe found down, said in words beside the other's groups."""

from __future__ import annotations

import json

import pytest
from django.utils import timezone

from devstack import kafka
from replication.actions import plan_groups
from replication.actions.plan_words import TopicOn
from replication.core.redis_channel import client
from replication.governance import audit
from replication.kafka import reachability
from replication.kafka.clusters import ClusterHealth
from replication.kafka.connections import cluster_admin, source_admin
from replication.models import GroupOffsetSync
from replication.topics import links, mirror_groups, offset_sync
from replication.topics.mirrors import create_mirror

pytestmark = pytest.mark.db

ACTOR = audit.Actor.system("tests")
SYNCING = {
    "cluster.link.paused": "true",
    "consumer.offset.sync.enable": "true",
    "consumer.offset.group.filters": json.dumps(
        {"groupFilters": [{"name": "app-", "patternType": "PREFIXED", "filterType": "INCLUDE"}]}
    ),
}


@pytest.fixture
def mirrored(memory_clusters, make_link, make_topic, topic_name):
    """A mirror of a source topic of two partitions, 10 records each, all copied, over a link
    with `configs`."""

    def make(configs: dict[str, str]):
        link = make_link(configs)
        topic = make_topic(kafka.SOURCE, topic_name, 2)
        mirror = create_mirror(ACTOR, link, topic)
        for p in (0, 1):
            memory_clusters["source"].produce(topic, p, 10)
            memory_clusters["destination"].produce(mirror.mirror_topic, p, 10)
        return mirror

    return make


def _section(client, mirror) -> str:
    answer = client.get(f"/mirrors/{mirror.destination.name}/{mirror.mirror_topic}/groups/")
    assert answer.status_code == 200
    return answer.content.decode()


def test_each_clusters_readers_of_the_topic_with_their_lag_and_what_offset_sync_does(
    mirrored, memory_clusters, client_as
):
    mirror = mirrored(SYNCING)
    source, destination = memory_clusters["source"], memory_clusters["destination"]
    topic = mirror.source_topic
    source.commit("app-billing", {(topic, 0): 4, (topic, 1): 10})
    offset_sync.sync_offsets(
        mirror.link, timezone.now(), source_admin(mirror.link), cluster_admin(mirror.destination)
    )
    source.commit("app-new", {(topic, 0): 10})  # selected, not synced yet
    source.commit("reports", {(topic, 1): 7})  # not selected by the filters
    source.join("reports", topic, 1)
    source.commit("elsewhere", {("another-topic", 0): 3})  # reads another topic: not listed
    destination.commit("moved-early", {(mirror.mirror_topic, 0): 2})  # the destination's own

    found = mirror_groups.mirror_groups(mirror)

    rows = {row.group: row for row in found.rows}
    assert list(rows) == ["app-billing", "app-new", "moved-early", "reports"]
    billing = rows["app-billing"]
    assert (billing.source.lag, billing.source.partitions) == (6, 2)
    assert billing.destination is not None and billing.destination.lag == 6  # synced across
    assert (billing.sync, billing.sync_state) == ("in step", "IN_STEP")
    assert rows["app-new"].sync == "not synced yet" and rows["app-new"].destination is None
    reports = rows["reports"]
    assert (reports.source.lag, reports.source.state, reports.source.members) == (3, "Stable", 1)
    assert reports.sync == "not selected" and "consumer.offset.group.filters" in reports.reason
    early = rows["moved-early"]
    assert early.source is None and early.destination.lag == 8
    assert early.sync == "not on the source"
    assert found.sync_enabled and not found.source.problem and not found.destination.problem

    page = _section(client_as("viewer"), mirror)
    assert 'data-group="app-billing"' in page and 'data-group="elsewhere"' not in page
    assert '<span class="badge ok">in step</span>' in page
    assert "Stable, 1 member, 1 partition" in page


def test_a_cluster_that_does_not_answer_is_said_beside_the_other_clusters_groups(
    mirrored, memory_clusters, client_as
):
    mirror = mirrored(SYNCING)
    memory_clusters["destination"].commit("app-moved", {(mirror.mirror_topic, 1): 9})
    memory_clusters["source"].down = True

    found = mirror_groups.mirror_groups(mirror)

    assert "no broker answered" in found.source.problem and not found.source.groups
    assert [row.group for row in found.rows] == ["app-moved"]
    page = _section(client_as("viewer"), mirror)
    assert "<strong>Source</strong>: " in page and "no broker answered" in page
    assert "read again once it can be read" in page
    assert 'data-group="app-moved"' in page


def test_with_offset_sync_off_the_section_says_how_to_carry_offsets_across(
    mirrored, memory_clusters, client_as
):
    mirror = mirrored({"cluster.link.paused": "true"})
    memory_clusters["source"].commit("app-1", {(mirror.source_topic, 0): 10})

    [row] = mirror_groups.mirror_groups(mirror).rows
    assert (row.sync, row.source.lag) == ("off", 0)
    page = _section(client_as("viewer"), mirror)
    assert "Consumer offset sync is off" in page and "consumer.offset.sync.enable=true" in page


def test_the_mirror_page_loads_the_section_on_its_own(mirrored, client_as):
    mirror = mirrored({"cluster.link.paused": "true"})
    url = f"/mirrors/{mirror.destination.name}/{mirror.mirror_topic}/"
    page = client_as("viewer").get(url).content.decode()
    assert f'hx-get="{url}groups/" hx-trigger="load"' in page
    assert "No consumer group has committed offsets" in _section(client_as("viewer"), mirror)


def test_the_plan_and_the_page_say_the_same_of_each_group(mirrored, memory_clusters):
    mirror = mirrored(SYNCING)
    link, topic = mirror.link, mirror.source_topic
    for group in ("app-elsewhere", "app-busy"):
        memory_clusters["source"].commit(group, {(topic, 0): 3})
    # In step, but on another mirror only: it says nothing of this topic (the page said "in
    # step"). Skipped, the group whole (active members on the destination): said on any topic.
    rows = [
        GroupOffsetSync(link=link, group="app-elsewhere", destination_group="app-elsewhere",
                        state="IN_STEP", offsets={"another/0": 5}),
        GroupOffsetSync(link=link, group="app-busy", destination_group="app-busy",
                        state="SKIPPED", reason="'app-busy' has 1 active member(s)"),
    ]  # fmt: skip
    GroupOffsetSync.objects.bulk_create(rows)

    def both() -> dict[str, tuple[str, str]]:
        page = {row.group: row.sync for row in mirror_groups.mirror_groups(mirror).rows}
        found, _ = plan_groups.readers(link, [TopicOn("source", topic)], ("east", "west"))
        return {g["group"]: (g["sync"], page[g["group"]]) for g in found}

    assert both() == {
        "app-elsewhere": ("SELECTED", "not synced yet"),
        "app-busy": ("SKIPPED", "skipped"),
    }
    # Sync turned off: off, though the syncer's rows are not forgotten yet.
    links.alter_link_configs(ACTOR, link, {"consumer.offset.sync.enable": "false"})
    assert both() == {"app-elsewhere": ("SYNC_OFF", "off"), "app-busy": ("SYNC_OFF", "off")}


def test_a_cluster_the_probe_found_down_is_not_asked(
    mirrored, memory_clusters, registered_clusters, client_as
):
    mirror = mirrored(SYNCING)
    memory_clusters["source"].commit("app-1", {(mirror.source_topic, 0): 4})
    memory_clusters["destination"].commit("app-moved", {(mirror.mirror_topic, 1): 9})
    reachability.keep([ClusterHealth(registered_clusters["source"], False, error="timed out")])
    try:
        found = mirror_groups.mirror_groups(mirror)
        page = _section(client_as("viewer"), mirror)
    finally:
        client().delete(reachability.KEY)

    said = "source did not answer the console's last probe (timed out)."
    assert (found.source.problem, found.source.groups) == (said, {})
    assert [row.group for row in found.rows] == ["app-moved"]
    assert said.replace("'", "&#x27;") in page and 'data-group="app-1"' not in page
