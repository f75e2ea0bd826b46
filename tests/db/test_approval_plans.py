"""The approver sees what approving does, on in-memory clusters: each action's plan as it was
when asked (kept with the request) and as it is now, on the request's page and in the API; a
truncate-and-restore's per-partition table; the clusters by name and the direction, so requests
one each way over a bidirectional link read apart; whether producers still write the source
topic (from the lag readings of the last minute); which consumer groups read the topic on each
cluster and whether offset sync has them; a link to every object named."""

from __future__ import annotations

import json
import re
import time

import pytest
from django.urls import reverse
from django.utils import timezone

from devstack import kafka
from infra.kafka_errors import KafkaAdminError
from replication.actions import approvals
from replication.core.redis_channel import client
from replication.cutover import promote
from replication.governance import audit
from replication.kafka import reachability
from replication.kafka.clusters import ClusterHealth
from replication.kafka.connections import cluster_admin, source_admin
from replication.models import ApprovalRequest, ClusterLink, MirrorTopic, SchemaSubjectSync
from replication.observe import lag, topic_ends
from replication.topics import links, offset_sync
from tests import memory_kafka

ACTOR = audit.Actor.system("tests")
Action = ApprovalRequest.Action


@pytest.fixture
def operator(users) -> audit.Actor:
    return audit.Actor(user=users["operator"], name="operator")


def _ask(operator, link: ClusterLink, action: str, topics=(), **kwargs) -> ApprovalRequest:
    submission = approvals.submit(operator, link, action, list(topics), "why", **kwargs)
    assert submission.request is not None
    return submission.request


def _page(client, request: ApprovalRequest) -> tuple[str, str]:
    """The request page's plan now and its plan when asked, as HTML."""
    shown = client.get(reverse("approval-detail", args=[request.pk])).content.decode()
    now, _, asked = shown.partition('id="plan-asked-section"')
    return now, asked


def _api(client, request: ApprovalRequest) -> dict:
    url = f"/kafka/v3/clusters/{request.destination.cluster_id}/approval-requests/{request.pk}"
    answer = client.get(url)
    assert answer.status_code == 200, answer.content
    return answer.json()


def _partition_rows(html: str) -> list[tuple[str, ...]]:
    return re.findall(
        r'<tr data-partition="\d+"><td>(\d+)</td><td>(\d+)</td><td>(\d+)</td><td>(\d+)</td>', html
    )


def test_a_truncate_and_restore_shows_its_per_partition_plan_when_asked_and_now(
    memory_mirror, topic_name, memory_clusters, operator, client_as, api
):
    link, _ = memory_mirror(5, 2, {"retention.ms": "86400000"})
    promote.stop_mirrors(ACTOR, link, [topic_name], promote.FAILOVER, wait=True)
    peer = links.peer_of(link)  # the half into the old primary, where the restore runs
    source, destination = memory_clusters["source"], memory_clusters["destination"]
    source.produce(topic_name, 1, 3)  # the old primary took three more after the failover
    destination.produce(topic_name, 0, 4)  # the new primary's own

    request = _ask(operator, peer, Action.TRUNCATE_AND_RESTORE, [topic_name])
    source.produce(topic_name, 1, 2)  # and two more since it was asked

    asked = request.plan_at_request
    assert asked["source_cluster"] == "destination" and asked["destination_cluster"] == "source"
    assert asked["summary"].startswith(f"Fail back {topic_name} on source: truncate it")
    assert asked["direction"].startswith(f"destination → source, over link {peer.name}")
    keys = ("partition_id", "offset_truncated_to", "messages_truncated", "records_to_copy")
    assert [tuple(p[k] for k in keys) for p in asked["topics"][0]["partitions"]] == [
        (0, 5, 0, 4),
        (1, 5, 3, 0),
    ]
    # The topic truncated is read for producers; its consumers are looked for on both sides.
    assert [(w["cluster"], w["topic"]) for w in asked["producers"]] == [("source", topic_name)]

    now, when_asked = _page(client_as("approver"), request)
    assert _partition_rows(now) == [("0", "5", "0", "4"), ("1", "5", "5", "0")]
    assert _partition_rows(when_asked) == [("0", "5", "0", "4"), ("1", "5", "3", "0")]
    assert "set aside in a quarantine topic on source" in now
    assert 'id="approve"' in now

    answer = _api(api("viewer"), request)
    assert answer["plan_at_request"]["topics"][0]["partitions"][1]["messages_truncated"] == 3
    assert answer["plan_now"]["topics"][0]["partitions"][1]["messages_truncated"] == 5
    named = {(o["kind"], o["name"]): o["url"] for o in answer["plan_now"]["objects"]}
    assert named[("link", peer.name)] == f"http://testserver/links/source/{peer.name}/"
    assert named[("mirror", topic_name)] == f"http://testserver/mirrors/destination/{topic_name}/"
    assert named[("cluster", "source")] == "http://testserver/clusters/source/"


@pytest.mark.parametrize(
    ("action", "summary"),
    [
        (Action.PROMOTE, "Promote {t} on destination: it stops mirroring source over link"),
        (Action.FAILOVER, "Fail over {t} on destination: it stops mirroring source over link"),
        (Action.REVERSE_AND_START, "Reverse {t}: destination becomes the primary and source"),
        (Action.REVERSE_AND_PAUSE, "Reverse {t}: destination becomes the primary and source"),
    ],
)
def test_a_mirrors_request_names_the_clusters_the_direction_and_each_topics_fate(
    action, summary, memory_mirror, topic_name, operator, client_as, api
):
    link, mirror = memory_mirror(3)
    request = _ask(operator, link, action, [topic_name])

    for plan in (request.plan_at_request, _api(api("viewer"), request)["plan_now"]):
        assert plan["summary"].startswith(summary.format(t=topic_name)), plan["summary"]
        assert plan["direction"] == (
            f"source → destination, over link {link.name} (one half of a bidirectional link: "
            "its other half copies destination → source)"
        )
        assert [t["mirror_topic"] for t in plan["topics"]] == [topic_name]
        assert plan["topics"][0]["lags"] == {"0": 0}
    now, asked = _page(client_as("approver"), request)
    assert f"{topic_name} on destination" in now and 'id="now-effects"' in now
    assert 'id="asked-summary"' in asked
    assert f'href="/mirrors/destination/{topic_name}/"' in now
    assert f'href="/links/destination/{link.name}/"' in now


def test_a_request_on_many_mirrors_words_the_first_twenty_and_counts_the_rest(
    make_link, make_topic, topic_name, operator
):
    from replication.topics.mirrors import create_mirror

    link = make_link({"cluster.link.paused": "true"})
    names = [make_topic(kafka.SOURCE, f"{topic_name}-{i:02d}") for i in range(23)]
    for name in names:
        create_mirror(ACTOR, link, name)
    request = _ask(operator, link, Action.FAILOVER, names)
    plan = request.plan_at_request
    assert plan["summary"].startswith(f"Fail over {', '.join(names[:5])} and 18 more on")
    assert len(plan["topics"]) == 23 and len(plan["producers"]) == 20
    assert plan["effects"][-1] == "And so for the 3 other mirror topics named."
    assert len(plan["effects"]) == 21


def test_a_reverse_says_which_cluster_becomes_the_mirror_of_which(
    memory_mirror, topic_name, operator
):
    link, _ = memory_mirror(1)
    request = _ask(operator, link, Action.REVERSE_AND_PAUSE, [topic_name])
    (effect,) = request.plan_at_request["effects"]
    assert effect == (
        f"{topic_name} on destination becomes writable (the primary), and {topic_name} on source "
        f"becomes its mirror: read-only, copying from {topic_name} on destination; its copy is "
        "left paused."
    )


def test_two_merge_flow_requests_one_each_way_read_apart_and_show_no_empty_dry_run(
    bidirectional, make_topic, topic_name, operator, client_as, api
):
    link = bidirectional()
    peer = links.peer_of(link)
    make_topic(kafka.SOURCE, topic_name)
    make_topic(kafka.DESTINATION, topic_name)
    params = {"source_topic": topic_name}
    into_destination = _ask(operator, link, Action.CREATE_FLOW, params=params)
    into_source = _ask(operator, peer, Action.CREATE_FLOW, params=params)

    one, other = into_destination.plan_at_request, into_source.plan_at_request
    assert f"copy {topic_name} on source into {topic_name} on destination" in one["summary"]
    assert f"copy {topic_name} on destination into {topic_name} on source" in other["summary"]
    assert one["topics"] == [] and other["topics"] == []

    listed = client_as("approver").get(reverse("approvals")).content.decode()
    directions = re.findall(r'<td class="direction">([^<]*)</td>', listed)
    assert sorted(directions) == ["destination → source", "source → destination"]
    into = re.findall(r'<td class="topics">[^<]* into ([^<]*)</td>', listed)
    assert sorted(into) == [f"{topic_name} on destination", f"{topic_name} on source"]
    now, asked = _page(client_as("approver"), into_source)
    assert "No mirror topics" not in now + asked
    assert "Dry run" not in now + asked
    flows = _api(api("viewer"), into_source)["plan_now"]
    assert flows["source_cluster"] == "destination" and flows["destination_cluster"] == "source"


def test_deleting_a_flow_a_link_and_making_subjects_writable_each_keep_their_plan(
    bidirectional, make_topic, topic_name, operator, api
):
    from replication.topics import merge_flows

    link = bidirectional()
    make_topic(kafka.SOURCE, topic_name)
    merge_flows.create_flow(ACTOR, link, topic_name)
    SchemaSubjectSync.objects.create(
        link=link, subject=f"{topic_name}-value", state="IN_STEP", versions=[1]
    )
    links.alter_link_configs(ACTOR, link, {"schema.sync.enable": "true"})
    flow = link.flows.get()

    deleting_flow = _ask(operator, link, Action.DELETE_FLOW, params={"flow": flow.name})
    deleting_link = _ask(operator, link, Action.DELETE_LINK, force=True)
    subjects = _ask(
        operator, link, Action.PROMOTE_SUBJECTS, params={"subjects": [f"{topic_name}-value"]}
    )

    flow_plan = deleting_flow.plan_at_request
    assert flow_plan["summary"].startswith(
        f"Delete merge flow {flow.name}: stop copying {topic_name} on source into {topic_name} "
        "on destination"
    )
    assert ("flow", flow.name) in {(o["kind"], o["name"]) for o in flow_plan["objects"]}
    assert deleting_link.plan_at_request["summary"] == (
        f"Fail over the 0 mirror topics of link {link.name}, both halves (source → destination "
        "and back), then delete it."
    )
    assert subjects.plan_at_request["summary"].startswith(
        f"Make schema subjects {topic_name}-value writable on destination's schema registry"
    )
    for request in (deleting_flow, deleting_link, subjects):
        answer = _api(api("viewer"), request)
        assert answer["plan_now"]["summary"] == request.plan_at_request["summary"]
        assert answer["plan_now_error"] == ""


def test_a_forced_deletion_of_a_bidirectional_link_names_what_it_fails_over_on_both_halves(
    memory_mirror, make_topic, topic_name, operator
):
    from replication.topics.mirrors import create_mirror

    link, _ = memory_mirror(1)
    back = make_topic(kafka.DESTINATION, f"{topic_name}-back")
    create_mirror(ACTOR, links.peer_of(link), back)

    plan = _ask(operator, link, Action.DELETE_LINK, force=True).plan_at_request

    assert plan["summary"] == (
        f"Fail over the 2 mirror topics of link {link.name}, both halves (source → destination "
        "and back), then delete it."
    )
    assert [e.split(" stops")[0] for e in plan["effects"]] == [
        f"{topic_name} on destination",
        f"{back} on source",
    ]


def test_producers_still_writing_the_source_in_the_last_minute_are_named(
    memory_mirror, topic_name, memory_clusters, operator, client_as
):
    link, mirror = memory_mirror(3)
    source_id = link.source_cluster_id
    # The lag sampler's readings a minute ago: three records then.
    topic_ends.keep_now(source_id, topic_name, {0: 3}, time.time() - 65)
    memory_clusters["source"].produce(topic_name, 0, 2)

    request = _ask(operator, link, Action.FAILOVER, [topic_name])

    (writes,) = request.plan_at_request["producers"]
    assert (writes["cluster"], writes["topic"], writes["state"]) == (
        "source",
        topic_name,
        "WRITING",
    )
    assert writes["records"] == 2 and writes["watched_s"] >= 60
    assert writes["words"].startswith(f"Producers still write {topic_name} on source: 2 records")
    now, _ = _page(client_as("approver"), request)
    assert f'<tr data-topic="{topic_name}" data-writes="WRITING">' in now


def test_a_topic_not_written_for_a_minute_is_quiet_and_one_not_watched_long_enough_unknown(
    memory_mirror, topic_name
):
    link, mirror = memory_mirror(3)
    source_id = link.source_cluster_id
    assert topic_ends.movement(source_id, topic_name).state == "UNKNOWN"  # never read
    lag.describe_mirrors([mirror])  # a reading now, as the sampler's
    moved = topic_ends.movement(source_id, topic_name)
    assert (moved.state, moved.records) == ("UNKNOWN", 0)  # not a minute yet
    topic_ends.keep_now(source_id, topic_name, {0: 3}, time.time() - 70)
    moved = topic_ends.movement(source_id, topic_name)
    assert (moved.state, moved.records) == ("QUIET", 0) and moved.watched_s >= 60


def test_the_groups_reading_the_topic_on_each_cluster_and_whether_their_offsets_are_synced(
    memory_mirror, topic_name, memory_clusters, operator, client_as, api
):
    groups = {
        "groupFilters": [{"name": "app-", "patternType": "PREFIXED", "filterType": "INCLUDE"}]
    }
    link, mirror = memory_mirror(
        10,
        **{
            "consumer.offset.sync.enable": "true",
            "consumer.offset.group.filters": json.dumps(groups),
        },
    )
    source, destination = memory_clusters["source"], memory_clusters["destination"]
    source.commit("app-orders", {(topic_name, 0): 4})
    source.commit("audit", {(topic_name, 0): 1})
    offset_sync.sync_offsets(
        link, timezone.now(), source_admin(link), cluster_admin(link.destination)
    )
    source.commit("app-late", {(topic_name, 0): 2})  # selected, not synced yet
    destination.commit("reports", {(topic_name, 0): 7})

    request = _ask(operator, link, Action.PROMOTE, [topic_name])

    found = {(g["group"], g["cluster"]): g["sync"] for g in request.plan_at_request["groups"]}
    assert found == {
        ("app-late", "source"): "SELECTED",
        ("app-orders", "source"): "IN_STEP",
        ("audit", "source"): "NOT_SELECTED",
        ("app-orders", "destination"): "COPY",
        ("reports", "destination"): "OWN",
    }
    now, _ = _page(client_as("approver"), request)
    assert '<tr data-group="audit" data-cluster="source" data-sync="NOT_SELECTED">' in now
    live = _api(api("viewer"), request)["plan_now"]["groups"]
    assert {(g["group"], g["cluster"], g["sync"]) for g in live} == {
        (group, cluster, sync) for (group, cluster), sync in found.items()
    }


def test_groups_that_cannot_be_read_are_said_and_the_plan_still_made(
    memory_mirror, topic_name, operator, monkeypatch
):
    link, _ = memory_mirror(1)

    def refuse(admin):
        raise KafkaAdminError(f"Could not list the consumer groups at {admin.bootstrap}: timed out")

    monkeypatch.setattr(memory_kafka.MemoryAdmin, "list_group_ids", refuse)
    request = _ask(operator, link, Action.PROMOTE, [topic_name])
    problems = request.plan_at_request["problems"]
    assert [p.split(":")[0] for p in problems] == [
        "The consumer groups on source could not be read",
        "The consumer groups on destination could not be read",
    ]
    assert request.plan_at_request["topics"][0]["mirror_topic"] == topic_name


def test_a_cluster_the_probe_found_down_is_not_asked_for_its_groups_and_producers(
    memory_mirror, topic_name, memory_clusters, registered_clusters, operator
):
    link, _ = memory_mirror(1)
    memory_clusters["source"].down = True  # a failover's: the source is lost
    health = ClusterHealth(registered_clusters["source"], False, error="no broker answered")
    reachability.keep([health])
    try:
        request = _ask(operator, link, Action.FAILOVER, [topic_name])
    finally:
        client().delete(reachability.KEY)
    down = "source did not answer the console's last probe (no broker answered)."
    assert request.plan_at_request["problems"] == [
        f"The consumer groups on source are not read: {down}",
        f"The end offsets of {topic_name} on source are not read now: {down}",
    ]
    assert request.plan_at_request["topics"][0]["error"] == ""  # a failover goes ahead


def test_the_plan_now_refreshes_on_its_own_and_a_decided_request_stops_reading(
    memory_mirror, topic_name, operator, users, client_as
):
    link, _ = memory_mirror(1)
    request = _ask(operator, link, Action.PROMOTE, [topic_name])
    client = client_as("approver")
    url = reverse("approval-detail", args=[request.pk])
    part = client.get(url, {"part": "plan"}, HTTP_HX_REQUEST="true").content.decode()
    assert part.lstrip().startswith('<section id="plan-now-section"') and "<html" not in part
    assert 'hx-trigger="every 15s"' in part and 'id="now-summary"' in part

    approvals.reject(audit.Actor(user=users["approver"], name="approver"), request, "no")
    part = client.get(url, {"part": "plan"}, HTTP_HX_REQUEST="true").content.decode()
    assert "hx-trigger" not in part and "no longer waits: it is REJECTED" in part


def test_every_look_within_fifteen_seconds_is_served_one_reading_of_the_clusters(
    memory_mirror, topic_name, operator, client_as, api, monkeypatch
):
    link, _ = memory_mirror(1)
    request = _ask(operator, link, Action.PROMOTE, [topic_name])
    made: list[int] = []
    real = approvals.plan_now

    def counted(found: ApprovalRequest):
        made.append(found.pk)
        return real(found)

    monkeypatch.setattr(approvals, "plan_now", counted)
    url = reverse("approval-detail", args=[request.pk])
    for role in ("approver", "admin", "viewer"):  # three viewers' tabs refreshing the plan
        part = client_as(role).get(url, {"part": "plan"}, HTTP_HX_REQUEST="true")
        assert 'id="now-summary"' in part.content.decode()
    first, second = _api(api("viewer"), request), _api(api("admin"), request)
    assert made == [request.pk]  # one reading of both clusters for all of them
    assert first["plan_now"] == second["plan_now"]

    # A change of the link's mirrors is seen at the next look, whatever the clusters' age.
    mirror = link.mirrors.get()
    MirrorTopic.objects.filter(pk=mirror.pk).update(state_time=timezone.now())
    _api(api("viewer"), request)
    assert made == [request.pk, request.pk]

    for key in client().scan_iter(match=f"isthmus:plan-now:{request.pk}:*"):
        client().delete(key)  # as FRESH_S later
    _api(api("viewer"), request)
    assert made == [request.pk, request.pk, request.pk]
