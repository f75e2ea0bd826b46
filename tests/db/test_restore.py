"""Truncate-and-restore's decisions on in-memory clusters: its dry run and refusals, which
records go into the quarantine and which come back at the promoted topic's offsets, a restore
given up before anything is deleted when compaction took a shared record, each stored step
redone after a worker died, and the quarantine deleted. The local copies here are the in-memory
clusters' (tests/memory_kafka.py); tests/integration/test_restore.py proves them on real
brokers, record by record, and through kill -9 of the worker and the engine."""

from __future__ import annotations

import pytest

from replication.core.errors import ReplicationError
from replication.cutover import promote, restore, restore_plan, restore_quarantine
from replication.governance import audit
from replication.models import AuditEvent, MirrorTopic
from replication.topics.links import peer_of
from tests import memory_kafka

ACTOR = audit.Actor.system("tests")
State = MirrorTopic.State


@pytest.fixture
def failed_over(memory_mirror, topic_name):
    """A 2-partition topic of `records` per partition on the source, mirrored over a
    bidirectional link, copied, then failed over: (the link's half into the source, where the
    restore runs)."""

    def make(records: int = 5):
        link, _ = memory_mirror(records, 2, {"retention.ms": "86400000"})
        (outcome,) = promote.stop_mirrors(ACTOR, link, [topic_name], promote.FAILOVER, wait=True)
        assert outcome.state == State.STOPPED, outcome.error
        return peer_of(link)

    return make


def _fenced(cluster: memory_kafka.MemoryCluster, topic: str) -> bool:
    return any(b.name == topic for b in cluster.acls)


def test_a_restore_sets_the_divergent_records_aside_and_makes_the_topic_anew_at_the_same_offsets(
    failed_over, topic_name, memory_clusters
):
    peer = failed_over(records=5)
    source, destination = memory_clusters["source"], memory_clusters["destination"]
    shared = source.records(topic_name, 1)
    source.produce(topic_name, 1, 3)  # the old primary took three more after all
    divergent = source.records(topic_name, 1)[5:]
    destination.produce(topic_name, 0, 4)  # the new primary's own

    (plan,) = restore.truncate_and_restore(ACTOR, peer, [topic_name], validate_only=True)
    assert not peer.mirrors.exists() and not _fenced(source, topic_name)  # a dry run
    assert [(p["offset_truncated_to"], p["messages_truncated"]) for p in plan.partitions] == [
        (5, 0),
        (5, 3),
    ]

    (outcome,) = restore.truncate_and_restore(ACTOR, peer, [topic_name], wait=True)

    assert outcome.error == "" and outcome.state == State.ACTIVE
    assert outcome.messages_truncated == 3
    # Nothing is lost: the quarantine holds the divergent three, saying where each was.
    quarantined = source.records(outcome.quarantine, 1)
    assert [(r.key, r.value, r.timestamp) for r in quarantined] == [
        (r.key, r.value, r.timestamp) for r in divergent
    ]
    assert [dict(r.headers)["isthmus.origin.offset"] for r in quarantined] == [b"5", b"6", b"7"]
    assert source.records(outcome.quarantine, 0) == []
    # The topic holds the shared records at their offsets, and the holding topic is gone.
    assert [(r.offset, r.value) for r in source.records(topic_name, 1)] == [
        (r.offset, r.value) for r in shared
    ]
    assert restore.HOLDING.format(topic=topic_name) not in source.topics
    assert source.topics[topic_name].configs["retention.ms"] == "86400000"  # kept
    restored = peer.mirrors.get(mirror_topic=topic_name)
    assert restored.state == State.ACTIVE and _fenced(source, topic_name)  # a mirror again
    report = restored.stop_report
    assert report["records_to_copy"] == {"0": 4, "1": 0}  # only the delta crosses
    assert report["messages_truncated"] == {"0": 0, "1": 3}
    assert [p["records_to_copy"] for p in outcome.partitions] == [4, 0]
    assert AuditEvent.objects.filter(action="mirror.restored", result="ok").count() == 1
    assert restore_quarantine.quarantine_of(restored) == outcome.quarantine

    restore_quarantine.delete_quarantine(ACTOR, restored)

    assert outcome.quarantine not in source.topics
    restored.refresh_from_db()
    assert restore_quarantine.quarantine_of(restored) == ""
    with pytest.raises(ReplicationError, match="has no quarantine topic left"):
        restore_quarantine.delete_quarantine(ACTOR, restored)


def test_records_retention_took_since_the_copy_leave_the_restored_log_starting_after_them(
    failed_over, topic_name, memory_clusters
):
    peer = failed_over(records=8)
    source = memory_clusters["source"]
    memory_kafka.MemoryAdmin({"bootstrap.servers": source.bootstrap}).delete_records(
        topic_name, {0: 3}
    )

    (outcome,) = restore.truncate_and_restore(ACTOR, peer, [topic_name], wait=True)

    assert outcome.error == "" and outcome.messages_truncated == 0
    log = source.topics[topic_name].partitions[0]
    assert (log.start, log.end) == (3, 8)  # placeholders held offsets 0-2, then deleted
    assert [r.value for r in source.records(topic_name, 0)] == [
        b"record %d" % o for o in range(3, 8)
    ]


def test_a_restore_is_given_up_before_anything_is_deleted_when_compaction_took_a_shared_record(
    failed_over, topic_name, memory_clusters
):
    peer = failed_over(records=6)
    source = memory_clusters["source"]
    source.compact(topic_name, 1, [2])
    before = source.records(topic_name, 1)

    (outcome,) = restore.truncate_and_restore(ACTOR, peer, [topic_name], wait=True)

    assert outcome.status == 409 and "compaction removed some since the copy" in outcome.error
    assert "Nothing was deleted; promote and mirror anew." in outcome.error
    assert source.records(topic_name, 1) == before
    assert not _fenced(source, topic_name) and not peer.mirrors.exists()
    assert not [t for t in source.topics if t.startswith(f"{topic_name}.")]  # no copy left
    assert AuditEvent.objects.filter(action="mirror.restore_failed", result="failed").exists()


def test_each_stored_step_is_redone_by_the_next_worker_after_one_died_in_it(
    failed_over, topic_name, memory_clusters
):
    peer = failed_over(records=4)
    source = memory_clusters["source"]
    admin = memory_kafka.MemoryAdmin({"bootstrap.servers": source.bootstrap})
    source.produce(topic_name, 0, 2)
    (outcome,) = restore.truncate_and_restore(ACTOR, peer, [topic_name])  # in the background
    restoring = peer.mirrors.get(mirror_topic=topic_name)
    assert restoring.state == State.PENDING_SETUP_FOR_RESTORE and _fenced(source, topic_name)

    # A worker that died in step 1 left a half-made quarantine: the next one makes it anew.
    admin.create_topic(outcome.quarantine, 2, None, {})
    source.produce(outcome.quarantine, 0, 3)
    restore.finish(peer)
    restoring.refresh_from_db()
    assert restoring.state == State.PENDING_RESTORE
    assert len(source.records(outcome.quarantine, 0)) == 2  # the 2, not 3 + 2
    # A worker that died in step 2 right after deleting the topic: the next one makes it anew
    # from the prefix it set aside.
    admin.delete_topic(topic_name)
    restore.finish(peer)
    restoring.refresh_from_db()

    assert restoring.state == State.ACTIVE
    assert admin.end_offsets(topic_name, 2) == {0: 4, 1: 4}
    assert source.topics[topic_name].configs["retention.ms"] == "86400000"


def test_a_restore_is_refused_clearly_where_it_cannot_run(failed_over, topic_name, memory_clusters):
    peer = failed_over(records=2)
    outcomes = restore_plan.check(peer, [topic_name, "never-mirrored"])
    assert [o.status for o in outcomes] == [200, 404]
    assert "is not the source of a mirror that link" in outcomes[1].error
    assert "the way back after a failover" in outcomes[1].error

    memory_clusters["destination"].down = True
    (unread,) = restore_plan.check(peer, [topic_name])
    assert unread.status == 503 and "The promoted topic" in unread.error
    memory_clusters["destination"].down = False

    restore.truncate_and_restore(ACTOR, peer, [topic_name], wait=True)
    (again,) = restore_plan.check(peer, [topic_name])
    assert again.status == 409 and again.error.startswith(
        f"Topic {topic_name!r} on source already mirrors {topic_name!r} on destination over "
        f"link {peer.name!r} (ACTIVE): destination is the primary and there is nothing to "
        "fail back."
    )


def test_a_prefixed_link_cannot_restore(bidirectional, topic_name):
    peer = peer_of(bidirectional(**{"cluster.link.prefix": "dc1."}))
    with pytest.raises(ReplicationError, match="needs a link without one"):
        restore_plan.check(peer, [topic_name])


def test_the_api_and_the_console_dry_run_a_truncate_and_restore_in_confluents_words(
    failed_over, topic_name, memory_clusters, api, client_as
):
    from django.urls import reverse as url

    peer = failed_over(records=5)
    memory_clusters["source"].produce(topic_name, 1, 3)  # taken by the old primary after all
    path = (
        f"/kafka/v3/clusters/{peer.destination.cluster_id}/links/{peer.name}"
        "/mirrors:truncate-and-restore?validate_only=true"
        "&include_partition_level_truncation_data=true"
    )

    answer = api("admin").post(
        path, {"mirror_topic_names": [topic_name]}, content_type="application/json"
    )

    assert answer.status_code == 200, answer.content
    (data,) = answer.json()["data"]
    assert data["error_code"] is None and data["messages_truncated"] == 3
    assert {
        p["partition_id"]: p["offset_truncated_to"] for p in data["partition_level_truncation_data"]
    } == {0: 5, 1: 5}
    assert not peer.mirrors.exists()  # a dry run: nothing restored, nothing fenced
    assert not _fenced(memory_clusters["source"], topic_name)
    refused = api("admin").post(
        path.split("?")[0],
        {"mirror_topic_names": ["no-such-topic"]},
        content_type="application/json",
    )
    assert "is not the source of a mirror that link" in refused.json()["data"][0]["error_message"]

    client = client_as("operator")
    args = [peer_of(peer).destination.name, topic_name]
    assert 'id="fail-back"' in client.get(url("mirror-detail", args=args)).content.decode()
    page = client.get(url("mirror-fail-back", args=args)).content.decode()
    assert 'id="plan-ok"' in page and 'id="plan-truncation"' in page
    assert page.count('<td class="truncated">') == 2 and "Ask for approval" in page


def test_an_admin_reviews_the_quarantine_in_the_console_and_deletes_it_once_typed(
    failed_over, topic_name, memory_clusters, client_as
):
    from django.urls import reverse as url

    peer = failed_over(records=5)
    source = memory_clusters["source"]
    source.topics[topic_name].partitions[1].append(b"k", b"\x1b]0;owned\x07 kept", [], 1000)
    (outcome,) = restore.truncate_and_restore(ACTOR, peer, [topic_name], wait=True)
    args = [peer.destination.name, topic_name]

    # Anyone may review it: where each record was, its bytes shown inert.
    operator = client_as("operator")
    assert 'id="quarantine-link"' in operator.get(url("mirror-detail", args=args)).content.decode()
    page = operator.get(url("mirror-quarantine", args=args)).content.decode()
    assert '<tr data-partition="1" data-offset="5">' in page
    assert "\\x1b]0;owned\\x07 kept" in page and "\x1b" not in page
    assert 'id="delete-quarantine"' not in page
    # Only an admin may delete it, and only with its name typed.
    refused = operator.post(url("mirror-quarantine-delete", args=args), {"confirm_name": "x"})
    assert refused.status_code == 403
    admin = client_as("admin")
    page = admin.get(url("mirror-quarantine", args=args)).content.decode()
    assert 'id="delete-quarantine"' in page
    admin.post(url("mirror-quarantine-delete", args=args), {"confirm_name": "wrong"})
    assert outcome.quarantine in source.topics

    admin.post(url("mirror-quarantine-delete", args=args), {"confirm_name": outcome.quarantine})

    assert outcome.quarantine not in source.topics
    done = AuditEvent.objects.get(action="mirror.quarantine_delete", result="ok")
    assert done.actor_name == "admin" and outcome.quarantine in done.message
    page = admin.get(url("mirror-quarantine", args=args)).content.decode()
    assert 'id="quarantine-deleted"' in page and "deleted by admin" in page
