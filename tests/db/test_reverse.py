"""Bidirectional links and the planned switchover (reverse-and-start-mirror,
reverse-and-pause-mirror) on in-memory clusters: the pair of halves, clear refusals, the fence
put on the source and lifted again when the engine does not confirm it stopped writing, and the
console's dry run. The copy itself, a fence a super user writes past and the record-by-record
checks are tests/integration/test_reverse.py, on real brokers."""

from __future__ import annotations

import json

import pytest
from django.utils import timezone

from devstack import kafka
from replication.core.errors import ReplicationError
from replication.cutover import reverse
from replication.governance import audit
from replication.models import AuditEvent, ClusterLink, MirrorTopic
from replication.states.mirror_states import move
from replication.sync import syncers
from replication.topics.links import peer_of
from replication.topics.mirrors import create_mirror, pause_mirror

ACTOR = audit.Actor.system("tests")
State = MirrorTopic.State


def test_a_bidirectional_link_is_one_name_with_a_half_on_each_cluster(
    bidirectional, registered_clusters
):
    link = bidirectional()
    peer = peer_of(link)
    assert (peer.name, peer.destination, peer.source_cluster_id) == (
        link.name,
        registered_clusters["source"],
        registered_clusters["destination"].cluster_id,
    )
    assert link.config("link.mode") == peer.config("link.mode") == "BIDIRECTIONAL"
    # Each half reads the other cluster as its registered link principal, at its address.
    assert link.configs["bootstrap.servers"] == registered_clusters["source"].bootstrap_servers
    assert peer.configs["bootstrap.servers"] == registered_clusters["destination"].bootstrap_servers
    assert AuditEvent.objects.filter(action="link.create").count() == 2


def test_reverse_is_refused_clearly_on_a_one_way_link_and_for_a_mirror_not_active(
    bidirectional, make_link, make_topic, topic_name
):
    make_topic(kafka.SOURCE, topic_name)
    one_way = make_link({"cluster.link.paused": "true"})
    create_mirror(ACTOR, one_way, topic_name)
    with pytest.raises(ReplicationError, match="is not bidirectional") as refused:
        reverse.reverse_mirrors(ACTOR, one_way, [topic_name], reverse.START)
    assert "Create one with link.mode=BIDIRECTIONAL" in str(refused.value)

    link = bidirectional()
    other = make_topic(kafka.SOURCE, f"{topic_name}-b")
    paused = create_mirror(ACTOR, link, other)
    pause_mirror(ACTOR, paused)
    (outcome, missing) = reverse.reverse_mirrors(
        ACTOR, link, [other, "no-such-mirror"], reverse.START
    )
    assert outcome.error == f"Mirror topic {other!r} is PAUSED; a reverse needs it ACTIVE."
    assert missing.status == 404
    paused.refresh_from_db()
    assert paused.state == State.PAUSED and not peer_of(link).mirrors.exists()
    assert AuditEvent.objects.filter(action=f"mirror.{reverse.START}", result="refused").count()


def test_a_prefixed_bidirectional_link_cannot_reverse(bidirectional, make_topic, topic_name):
    make_topic(kafka.SOURCE, topic_name)
    link = bidirectional(**{"cluster.link.prefix": "dc1."})
    create_mirror(ACTOR, link, topic_name)
    with pytest.raises(ReplicationError, match="need a link without a prefix"):
        reverse.reverse_mirrors(ACTOR, link, [f"dc1.{topic_name}"], reverse.START)


def test_the_console_offers_a_reverse_on_a_bidirectional_link_with_its_dry_run(
    bidirectional, make_link, make_topic, topic_name, client_as
):
    from django.urls import reverse as url

    make_topic(kafka.SOURCE, topic_name)
    link = bidirectional()
    mirror = create_mirror(ACTOR, link, topic_name)
    client = client_as("operator")
    args = [mirror.destination.name, topic_name]
    page = client.get(url("mirror-detail", args=args)).content.decode()
    assert 'id="reverse"' in page and 'id="reverse-paused"' in page
    peer = peer_of(link)
    pair = client.get(url("link-detail", args=[link.destination.name, link.name])).content.decode()
    assert 'id="bidirectional"' in pair
    assert f"{peer.name} on {peer.destination.name}</a>, mirrors the other way" in pair
    # The link page offers each mirror's way back too, to those who may ask for it.
    assert f'href="{url("mirror-reverse", args=args)}"' in pair
    dry_run = client.get(url("mirror-reverse", args=args)).content.decode()
    assert "<h1>Reverse " in dry_run and 'id="plan-ok"' in dry_run
    assert "No record is copied." in dry_run and "Ask for approval" in dry_run

    other = make_topic(kafka.SOURCE, f"{topic_name}-one-way")
    one_way = create_mirror(ACTOR, make_link(), other)
    args = [one_way.destination.name, other]
    assert 'id="reverse"' not in client.get(url("mirror-detail", args=args)).content.decode()
    refused = client.get(url("mirror-reverse", args=args)).content.decode()
    assert "is not bidirectional" in refused and 'id="plan-error"' in refused
    link_page = url("link-detail", args=[link.destination.name, link.name])
    assert 'class="way-back"' not in client_as("viewer").get(link_page).content.decode()


def _fenced(cluster, topic: str) -> bool:
    return any(b.name == topic for b in cluster.acls)


def test_a_reverse_fences_the_source_where_it_ends_and_swaps_the_two_sides_at_those_offsets(
    bidirectional, make_topic, topic_name, memory_clusters
):
    make_topic(kafka.SOURCE, topic_name, 2)
    link = bidirectional()
    mirror = create_mirror(ACTOR, link, topic_name)
    assert _fenced(memory_clusters["destination"], topic_name)  # a mirror is read-only
    for cluster in (memory_clusters["source"], memory_clusters["destination"]):
        cluster.produce(topic_name, 0, 5)  # copied in full: nothing to wait for

    [outcome] = reverse.reverse_mirrors(ACTOR, link, [topic_name], reverse.START)

    mirror.refresh_from_db()
    assert outcome.error == "" and mirror.state == State.PENDING_SYNCHRONIZE
    assert mirror.pending_stop["fence"] == {"0": 5, "1": 0}
    assert _fenced(memory_clusters["source"], topic_name)
    assert AuditEvent.objects.filter(action=f"mirror.{reverse.START}", result="ok").count() == 1

    # Caught up, its writer told to stop; the engine runs no copier of this link, so none
    # writes: the swap goes through.
    reverse.finish(link)
    reverse.finish(link)

    mirror.refresh_from_db()
    assert mirror.state == State.STOPPED and mirror.stop_report["kind"] == reverse.START
    assert not _fenced(memory_clusters["destination"], topic_name)  # writable now
    back = peer_of(link).mirrors.get(mirror_topic=topic_name)
    assert back.state == State.ACTIVE and back.source_topic == topic_name
    assert _fenced(memory_clusters["source"], topic_name)  # the fence is its read-only rules


def test_a_fence_written_past_is_detected_at_the_swap_and_everything_is_put_back(
    memory_mirror, topic_name, memory_clusters
):
    link, mirror = memory_mirror(records=5)
    reverse.reverse_mirrors(ACTOR, link, [topic_name], reverse.START)
    reverse.finish(link)  # caught up: its writer told to stop
    memory_clusters["source"].produce(topic_name, 0, 3)  # a super user writes past the fence

    reverse.finish(link)

    mirror.refresh_from_db()
    assert mirror.state == State.ACTIVE and "did not hold" in mirror.action_error
    assert not _fenced(memory_clusters["source"], topic_name)  # writable again
    assert _fenced(memory_clusters["destination"], topic_name)  # still a mirror
    assert not peer_of(link).mirrors.exists()
    assert "did not hold" in AuditEvent.objects.get(action="mirror.reverse_failed").message


def test_a_reverse_whose_worker_died_before_the_fence_is_fenced_and_finished_by_the_next(
    memory_mirror, topic_name, memory_clusters
):
    link, mirror = memory_mirror(records=4)
    # What a worker killed right after the state change leaves: no fence, no fence offsets.
    pending = {"kind": reverse.START, "prior_state": "ACTIVE", "actor": "tests", "note": ""}
    pending["requested_at"] = timezone.now().isoformat()
    move(mirror, "reverse", State.PENDING_SYNCHRONIZE, pending_stop=pending)
    assert not _fenced(memory_clusters["source"], topic_name)

    for _ in range(3):
        reverse.finish(link)

    mirror.refresh_from_db()
    assert mirror.state == State.STOPPED and mirror.stop_offsets == {"0": 4}
    assert peer_of(link).mirrors.get(mirror_topic=topic_name).state == State.ACTIVE
    assert _fenced(memory_clusters["source"], topic_name)  # now a mirror's read-only rules


def test_a_mirror_that_cannot_catch_up_is_put_back_and_its_source_unfenced(
    memory_mirror, topic_name, memory_clusters, settings
):
    settings.STOP_TIMEOUT_S = 0
    link, mirror = memory_mirror()
    memory_clusters["source"].produce(topic_name, 0, 5)  # and no engine copies them

    (outcome,) = reverse.reverse_mirrors(ACTOR, link, [topic_name], reverse.START, wait=True)

    assert outcome.status == 503 and "did not catch up with its fenced source" in outcome.error
    mirror.refresh_from_db()
    assert mirror.state == State.ACTIVE and mirror.pending_stop is None
    assert not _fenced(memory_clusters["source"], topic_name)  # the fence is lifted
    assert not peer_of(link).mirrors.exists()


def test_a_gap_of_transaction_markers_past_the_mirrors_end_is_not_waited_for(
    memory_mirror, topic_name, memory_clusters
):
    link, mirror = memory_mirror()
    source = memory_clusters["source"]
    source.produce(topic_name, 0, 6)
    source.compact(topic_name, 0, [4, 5])  # a commit marker and an aborted record: no records
    memory_clusters["destination"].produce(topic_name, 0, 4)
    reverse.reverse_mirrors(ACTOR, link, [topic_name], reverse.START)

    reverse.finish(link)

    mirror.refresh_from_db()
    assert mirror.state == State.PENDING_STOPPED  # caught up: the writer is told to stop
    source.topics[topic_name].partitions[0].holes.discard(5)  # were one a record, it would wait
    assert reverse._behind(mirror, {0: 4}) == 0


def test_consumer_offsets_follow_the_new_direction_after_a_reverse(
    memory_mirror, topic_name, memory_clusters
):
    group = "reversed-group"
    filters = {"groupFilters": [{"name": group, "patternType": "LITERAL", "filterType": "INCLUDE"}]}
    link, _ = memory_mirror(
        records=20,
        partitions=2,
        **{
            "consumer.offset.sync.enable": "true",
            "consumer.offset.group.filters": json.dumps(filters),
        },
    )
    (outcome,) = reverse.reverse_mirrors(ACTOR, link, [topic_name], reverse.START, wait=True)
    assert outcome.error == ""
    peer = peer_of(link)

    # The group reads on the new primary, then moves back: the old source now holds its offsets.
    memory_clusters["destination"].commit(group, {(topic_name, 0): 12, (topic_name, 1): 7})
    ClusterLink.objects.filter(pk=peer.pk).update(offsets_synced_at=None)
    peer.refresh_from_db()
    syncers.sync_link(peer, timezone.now())  # as the beat does

    assert memory_clusters["source"].groups[group].offsets == {
        (topic_name, 0): 12,
        (topic_name, 1): 7,
    }
