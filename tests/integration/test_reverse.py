"""Bidirectional links and the planned switchover (reverse-and-start-mirror,
reverse-and-pause-mirror) on the real clusters: nothing copied, both topics identical record
by record, a fence a super user writes past detected and everything put back, and clear
refusals."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time

import psutil
import pytest
from confluent_kafka import KafkaError, Producer
from django.utils import timezone

from devstack import kafka
from infra.kafka_admin import KafkaAdmin
from infra.processes import read_pidfile, wait_for
from replication import audit, promote, redis_channel, restore, reverse, streams
from replication.errors import ReplicationError
from replication.links import peer_of
from replication.mirror_states import move
from replication.mirrors import create_mirror, pause_mirror
from replication.models import AuditEvent, ClusterLink, MirrorTopic
from replication.sync import syncers
from spark_jobs import control
from tests import leftovers
from tests.conftest import admin_config, start_celery_worker, stop_process
from tests.kafka_clients import commit_offsets, write_transactions
from tests.mirror_checks import eventually, read_all, run_until_copied

pytestmark = pytest.mark.integration

ACTOR = audit.Actor.system("tests")
RECENT = int(time.time() * 1000) - 600_000
State = MirrorTopic.State


def _write(bootstrap_config: dict, topic: str, first: int, count: int) -> None:
    producer = Producer({**bootstrap_config, "queue.buffering.max.messages": 1_000_000})
    for i in range(first, first + count):
        producer.produce(
            topic,
            key=str(i).encode(),
            value=f"value {i}".encode(),
            partition=i % 2,
            timestamp=RECENT + i,
            headers=[("i", str(i).encode())],
        )
    assert producer.flush(30) == 0


def _plain(node: kafka.KafkaNode) -> dict:
    return {"bootstrap.servers": node.bootstrap}  # an ordinary client, bound by ACLs


def _refused(node: kafka.KafkaNode, topic: str) -> bool:
    """Whether an ordinary client's write to `topic` is refused for want of rights."""
    errors = []
    producer = Producer({**_plain(node), "message.timeout.ms": 10_000})
    producer.produce(topic, value=b"x", on_delivery=lambda err, msg: errors.append(err))
    producer.flush(15)
    return (
        bool(errors)
        and errors[0] is not None
        and errors[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    )


@pytest.fixture
def copied_mirror(bidirectional, make_topic, topic_name):
    """`records` written to a new 2-partition topic on the source, mirrored over a new
    bidirectional link and copied: (the link's half into the destination, the mirror)."""

    def make(
        records: int = 0, topic_configs: dict | None = None, transactional: bool = False
    ) -> tuple[ClusterLink, MirrorTopic]:
        make_topic(kafka.SOURCE, topic_name, partitions=2, **(topic_configs or {}))
        if transactional:  # (write_transactions: 40 records per partition, up to offset 65)
            write_transactions(kafka.SOURCE.bootstrap, topic_name)
        _write(_plain(kafka.SOURCE), topic_name, 0, records)
        link = bidirectional()
        mirror = create_mirror(ACTOR, link, topic_name)
        run_until_copied(link, [mirror])
        return link, mirror

    return make


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


def test_reverse_copies_nothing_and_the_old_source_mirrors_the_new_primary_at_the_same_offsets(
    copied_mirror, topic_name
):
    link, mirror = copied_mirror(records=200)
    before = read_all(kafka.SOURCE.bootstrap, topic_name)

    (outcome,) = reverse.reverse_mirrors(ACTOR, link, [topic_name], reverse.START, wait=True)

    assert (outcome.error, outcome.state) == ("", State.STOPPED)
    peer = peer_of(link)
    reversed_mirror = peer.mirrors.get(mirror_topic=topic_name)
    assert (reversed_mirror.source_topic, reversed_mirror.state) == (topic_name, State.ACTIVE)
    # Nothing was copied: the old source holds exactly what it held, and both sides are equal.
    assert read_all(kafka.SOURCE.bootstrap, topic_name) == before
    assert read_all(kafka.DESTINATION.bootstrap, topic_name) == before
    # The new primary takes writes; the old source, now a mirror, refuses an ordinary client.
    _write(_plain(kafka.DESTINATION), topic_name, 200, 50)
    assert _refused(kafka.SOURCE, topic_name)
    run_until_copied(peer, [reversed_mirror])
    after = read_all(kafka.DESTINATION.bootstrap, topic_name)
    assert len(after) == 250
    assert read_all(kafka.SOURCE.bootstrap, topic_name) == after  # record by record, offsets too


def test_reverse_and_pause_leaves_the_old_sources_new_mirror_paused(
    bidirectional, make_topic, topic_name
):
    make_topic(kafka.SOURCE, topic_name)
    _write(_plain(kafka.SOURCE), topic_name, 0, 10)
    link = bidirectional()
    mirror = create_mirror(ACTOR, link, topic_name)
    run_until_copied(link, [mirror])

    (outcome,) = reverse.reverse_mirrors(ACTOR, link, [topic_name], reverse.PAUSE, wait=True)

    assert outcome.error == ""
    reversed_mirror = peer_of(link).mirrors.get(mirror_topic=topic_name)
    assert (reversed_mirror.state, reversed_mirror.paused) == (State.PAUSED, True)


def test_a_fence_a_super_user_wrote_past_is_detected_and_everything_is_put_back(
    copied_mirror, topic_name
):
    link, mirror = copied_mirror(records=100)

    (outcome,) = reverse.reverse_mirrors(ACTOR, link, [topic_name], reverse.START)
    assert outcome.state == State.PENDING_SYNCHRONIZE
    assert _refused(kafka.SOURCE, topic_name)  # fenced
    _write(admin_config(kafka.SOURCE), topic_name, 100, 3)  # a super user: past every ACL

    def settled() -> bool:
        reverse.finish(link)
        mirror.refresh_from_db()
        return mirror.state not in (State.PENDING_SYNCHRONIZE, State.PENDING_STOPPED)

    eventually(settled, 120, "the reverse settling")
    assert mirror.state == State.ACTIVE
    assert "did not hold" in mirror.action_error
    assert not peer_of(link).mirrors.exists()
    _write(_plain(kafka.SOURCE), topic_name, 103, 1)  # the fence is lifted: writable again
    failed = AuditEvent.objects.get(action="mirror.reverse_failed")
    assert "did not hold" in failed.message
    run_until_copied(link, [mirror])  # and the mirror follows it again, every record
    assert read_all(kafka.DESTINATION.bootstrap, topic_name) == read_all(
        kafka.SOURCE.bootstrap, topic_name
    )


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


def test_an_approved_reverse_asked_through_the_api_runs_on_the_worker(
    transactional_db, celery_worker, copied_mirror, topic_name, api
):
    link, mirror = copied_mirror(records=40)
    base = f"/kafka/v3/clusters/{link.destination.cluster_id}"

    asked = api("operator").post(
        f"{base}/links/{link.name}/mirrors:{reverse.START}",
        {"mirror_topic_names": [topic_name], "reason": "switch over for maintenance"},
        content_type="application/json",
    )
    assert asked.status_code == 202, asked.content
    request = asked.json()["approval_request"]
    assert request["action"] == reverse.START
    approved = api("approver").post(f"{base}/approval-requests/{request['id']}:approve")
    assert approved.json()["state"] == "APPROVED"

    def finished() -> str | None:
        state = api("viewer").get(f"{base}/approval-requests/{request['id']}").json()["state"]
        return state if state != "APPROVED" else None

    assert eventually(finished, 120, "the approved reverse running") == "EXECUTED"
    mirror.refresh_from_db()
    assert mirror.state == State.STOPPED
    assert peer_of(link).mirrors.get(mirror_topic=topic_name).state == State.ACTIVE
    assert read_all(kafka.SOURCE.bootstrap, topic_name) == read_all(
        kafka.DESTINATION.bootstrap, topic_name
    )


def test_a_swap_and_back_copies_no_record_twice_and_keeps_the_offsets_identical(
    copied_mirror, topic_name
):
    link, mirror = copied_mirror(records=60)
    peer = peer_of(link)

    (there,) = reverse.reverse_mirrors(ACTOR, link, [topic_name], reverse.START, wait=True)
    assert there.error == ""
    _write(_plain(kafka.DESTINATION), topic_name, 60, 30)  # the burst, on the new primary
    back_mirror = peer.mirrors.get(mirror_topic=topic_name)
    run_until_copied(peer, [back_mirror])
    (back,) = reverse.reverse_mirrors(ACTOR, peer, [topic_name], reverse.START, wait=True)
    assert back.error == ""
    _write(_plain(kafka.SOURCE), topic_name, 90, 10)  # the original primary again
    again = link.mirrors.get(mirror_topic=topic_name)
    assert again.state == State.ACTIVE and again.pk != mirror.pk
    run_until_copied(link, [again])

    on_source = read_all(kafka.SOURCE.bootstrap, topic_name)
    assert sorted(int(r.key) for r in on_source) == list(range(100))  # each record once
    assert read_all(kafka.DESTINATION.bootstrap, topic_name) == on_source  # offsets identical
    assert not _refused(kafka.SOURCE, topic_name) and _refused(kafka.DESTINATION, topic_name)


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


def test_a_reverse_whose_worker_died_before_the_fence_is_fenced_and_finished_by_the_next(
    copied_mirror, topic_name
):
    link, mirror = copied_mirror(records=20)
    # What a worker killed right after the state change leaves: no fence, no fence offsets.
    pending = {"kind": reverse.START, "prior_state": "ACTIVE", "actor": "tests", "note": ""}
    pending["requested_at"] = timezone.now().isoformat()
    move(mirror, "reverse", State.PENDING_SYNCHRONIZE, pending_stop=pending)
    assert not _refused(kafka.SOURCE, topic_name)  # not fenced yet

    def settled() -> bool:
        reverse.finish(link)
        mirror.refresh_from_db()
        return mirror.state == State.STOPPED

    eventually(settled, 120, "the next worker finishing the reverse")
    assert peer_of(link).mirrors.get(mirror_topic=topic_name).state == State.ACTIVE
    assert _refused(kafka.SOURCE, topic_name)  # fenced, and now a mirror's read-only rules
    # The write that went in before the fence is on both sides.
    assert read_all(kafka.SOURCE.bootstrap, topic_name) == read_all(
        kafka.DESTINATION.bootstrap, topic_name
    )


def test_a_mirror_that_cannot_catch_up_is_put_back_and_its_source_unfenced(
    bidirectional, make_topic, topic_name, settings
):
    settings.STOP_TIMEOUT_S = 3
    make_topic(kafka.SOURCE, topic_name)
    link = bidirectional()
    mirror = create_mirror(ACTOR, link, topic_name)
    _write(_plain(kafka.SOURCE), topic_name, 0, 5)  # and no stream runs to copy them

    (outcome,) = reverse.reverse_mirrors(ACTOR, link, [topic_name], reverse.START, wait=True)

    assert outcome.status == 503 and "did not catch up with its fenced source" in outcome.error
    mirror.refresh_from_db()
    assert mirror.state == State.ACTIVE and mirror.pending_stop is None
    assert not _refused(kafka.SOURCE, topic_name)  # the fence is lifted
    assert not peer_of(link).mirrors.exists()


def test_consumer_offsets_follow_the_new_direction_after_a_reverse(
    bidirectional, make_topic, topic_name
):
    group = leftovers.unique_name("reversed-group")
    make_topic(kafka.SOURCE, topic_name, partitions=2)
    _write(_plain(kafka.SOURCE), topic_name, 0, 40)
    filters = {"groupFilters": [{"name": group, "patternType": "LITERAL", "filterType": "INCLUDE"}]}
    link = bidirectional(
        **{
            "consumer.offset.sync.enable": "true",
            "consumer.offset.group.filters": json.dumps(filters),
        }
    )
    mirror = create_mirror(ACTOR, link, topic_name)
    run_until_copied(link, [mirror])
    (outcome,) = reverse.reverse_mirrors(ACTOR, link, [topic_name], reverse.START, wait=True)
    assert outcome.error == ""
    peer = peer_of(link)

    # The group reads on the new primary, then moves back: the old source now holds its offsets.
    commit_offsets(kafka.DESTINATION, group, {(topic_name, 0): 12, (topic_name, 1): 7})
    ClusterLink.objects.filter(pk=peer.pk).update(offsets_synced_at=None)
    peer.refresh_from_db()
    syncers.sync_link(peer, timezone.now())  # as the beat does

    on_old_source = KafkaAdmin(admin_config(kafka.SOURCE)).group_offsets([group])[group]
    assert on_old_source == {(topic_name, 0): 12, (topic_name, 1): 7}


def test_truncate_and_restore_quarantines_the_divergent_records_and_copies_only_the_delta(
    copied_mirror, topic_name
):
    link, mirror = copied_mirror(records=100)
    (failed_over,) = promote.stop_mirrors(ACTOR, link, [topic_name], promote.FAILOVER, wait=True)
    assert failed_over.state == State.STOPPED
    shared = read_all(kafka.DESTINATION.bootstrap, topic_name)
    _write(_plain(kafka.SOURCE), topic_name, 100, 7)  # the old primary took these after all
    divergent = [r for r in read_all(kafka.SOURCE.bootstrap, topic_name) if r not in shared]
    _write(_plain(kafka.DESTINATION), topic_name, 200, 20)  # the new primary's own
    peer = peer_of(link)

    (outcome,) = restore.truncate_and_restore(ACTOR, peer, [topic_name], wait=True)

    assert outcome.error == "", outcome.error
    assert outcome.messages_truncated == 7 and len(divergent) == 7
    by_partition = {p["partition_id"]: p for p in outcome.partitions}
    assert {p: by_partition[p]["offset_truncated_to"] for p in (0, 1)} == {0: 50, 1: 50}
    # Nothing is lost: the quarantine holds exactly the divergent records, saying where from.
    quarantined = read_all(kafka.SOURCE.bootstrap, outcome.quarantine)
    assert [(r.key, r.value, r.timestamp) for r in quarantined] == [
        (r.key, r.value, r.timestamp) for r in divergent
    ]
    for q, r in zip(quarantined, divergent, strict=True):
        headers = dict(q.headers)
        assert headers["isthmus.origin.partition"] == str(r.partition).encode()
        assert headers["isthmus.origin.offset"] == str(r.offset).encode()
    # The old primary is a mirror of the promoted topic again, record by record.
    restored = peer.mirrors.get(mirror_topic=topic_name)
    assert restored.state == State.ACTIVE
    assert _refused(kafka.SOURCE, topic_name)
    run_until_copied(peer, [restored])
    assert read_all(kafka.SOURCE.bootstrap, topic_name) == read_all(
        kafka.DESTINATION.bootstrap, topic_name
    )
    # Only the delta crossed: the restored mirror's stream copied the new primary's 20, and
    # the result says so; the shared prefix was copied within the old primary, aside and back.
    heartbeat = control.read_json(redis_channel.client(), control.heartbeat_key(str(peer.link_id)))
    assert heartbeat["records"] == 20
    assert [p["records_to_copy"] for p in outcome.partitions] == [10, 10]
    shared_bytes = sum(len(r.key or b"") + len(r.value or b"") for r in shared)
    divergent_bytes = sum(len(r.key or b"") + len(r.value or b"") for r in divergent)
    assert outcome.bytes_copied_within_cluster == 2 * shared_bytes + divergent_bytes
    leftovers.delete_topics(kafka.SOURCE, [outcome.quarantine])


def test_the_api_and_the_console_dry_run_a_truncate_and_restore_in_confluents_words(
    copied_mirror, topic_name, api, client_as
):
    link, mirror = copied_mirror(records=10)
    promote.stop_mirrors(ACTOR, link, [topic_name], promote.FAILOVER, wait=True)
    _write(_plain(kafka.SOURCE), topic_name, 10, 3)  # taken by the old primary after all
    peer = peer_of(link)
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
    assert not _refused(kafka.SOURCE, topic_name)
    refused = api("admin").post(
        path.split("?")[0],
        {"mirror_topic_names": ["no-such-topic"]},
        content_type="application/json",
    )
    assert "is not the source of a mirror that link" in refused.json()["data"][0]["error_message"]

    from django.urls import reverse as url

    client, args = client_as("operator"), [mirror.destination.name, topic_name]
    assert 'id="fail-back"' in client.get(url("mirror-detail", args=args)).content.decode()
    page = client.get(url("mirror-fail-back", args=args)).content.decode()
    assert 'id="plan-ok"' in page and 'id="plan-truncation"' in page
    assert page.count('<td class="truncated">') == 2 and "Ask for approval" in page


def test_a_restore_resumes_from_each_stored_step_after_its_worker_died(copied_mirror, topic_name):
    link, mirror = copied_mirror(records=40, topic_configs={"retention.ms": "86400000"})
    promote.stop_mirrors(ACTOR, link, [topic_name], promote.FAILOVER, wait=True)
    _write(_plain(kafka.SOURCE), topic_name, 40, 4)
    peer = peer_of(link)
    (outcome,) = restore.truncate_and_restore(ACTOR, peer, [topic_name])  # in the background
    restoring = peer.mirrors.get(mirror_topic=topic_name)
    assert restoring.state == State.PENDING_SETUP_FOR_RESTORE
    source = KafkaAdmin(admin_config(kafka.SOURCE))

    # A worker that died in step 1 left a half-made quarantine: the next one makes it anew.
    source.create_topic(outcome.quarantine, 2, None, {})
    _write(_plain(kafka.SOURCE), outcome.quarantine, 0, 3)
    restore.finish(peer)
    restoring.refresh_from_db()
    assert restoring.state == State.PENDING_RESTORE
    # A worker that died in step 2 right after deleting the topic: the next one makes it anew
    # from the prefix it set aside.
    source.delete_topic(topic_name)
    eventually(lambda: topic_name not in source.list_topic_names(), 60, "the topic gone")
    restore.finish(peer)
    restoring.refresh_from_db()

    assert restoring.state == State.ACTIVE
    assert len(read_all(kafka.SOURCE.bootstrap, outcome.quarantine)) == 4  # the 4, not 3 + 4
    assert source.end_offsets(topic_name, 2) == {0: 20, 1: 20}  # the shared 40 at their offsets
    assert source.topic_configs(topic_name)["retention.ms"].value == "86400000"  # kept
    run_until_copied(peer, [restoring])
    assert read_all(kafka.SOURCE.bootstrap, topic_name) == read_all(
        kafka.DESTINATION.bootstrap, topic_name
    )
    leftovers.delete_topics(kafka.SOURCE, [outcome.quarantine])


@pytest.fixture
def own_workers(transactional_db, tmp_path):
    """Real Celery workers (with beat) of the test's own, to kill: the session's worker stops
    taking tasks meanwhile, so the restore is done by these alone."""
    from console.celery import app

    session = [f"test-worker-{os.getpid()}@localhost"]
    app.control.cancel_consumer("celery", destination=session, reply=True, timeout=2)
    started: list[subprocess.Popen] = []

    def start() -> subprocess.Popen:
        folder = tmp_path / f"worker-{len(started)}"
        folder.mkdir()
        started.append(start_celery_worker(folder, f"restorer-{len(started)}-{os.getpid()}@lo"))
        return started[-1]

    yield start
    for proc in started:
        stop_process(proc)
    app.control.add_consumer("celery", destination=session, reply=True, timeout=2)


def _kill_9(proc: subprocess.Popen) -> None:
    """SIGKILL the worker and everything it started (its embedded beat): no clean-up runs."""
    family = [psutil.Process(proc.pid), *psutil.Process(proc.pid).children(recursive=True)]
    for each in family:
        each.kill()
    psutil.wait_procs(family, timeout=10)


def test_kill_9_of_the_worker_in_each_restore_step_and_of_the_stream_after_ends_it_exactly(
    own_workers, copied_mirror, topic_name
):
    # Enough records that each step's copy, and the delta's, take seconds: time to kill.
    records, delta = 200_000, 400_000
    link, mirror = copied_mirror(records=records)
    promote.stop_mirrors(ACTOR, link, [topic_name], promote.FAILOVER, wait=True)
    _write(_plain(kafka.SOURCE), topic_name, records, 50)  # the old primary's, diverging
    _write(_plain(kafka.DESTINATION), topic_name, 1_000_000, delta)  # the new primary's
    peer, source = peer_of(link), KafkaAdmin(admin_config(kafka.SOURCE))
    holding = restore.HOLDING.format(topic=topic_name)

    def midway(state: str, topic: str):
        def check() -> bool:
            restoring = peer.mirrors.get(mirror_topic=topic_name)
            copied = sum(source.end_offsets(topic, 2).values())
            return restoring.state == state and 0 < copied < records

        return check

    worker = own_workers()
    (outcome,) = restore.truncate_and_restore(ACTOR, peer, [topic_name])  # the worker's task
    assert wait_for(midway(State.PENDING_SETUP_FOR_RESTORE, holding), 120, 0.05), "no step 1"
    _kill_9(worker)  # mid-way through setting the shared records aside
    assert _refused(kafka.SOURCE, topic_name)  # fenced, untouched, while it waits

    worker = own_workers()  # takes the topic over once the dead one's lease has run out
    assert wait_for(midway(State.PENDING_RESTORE, topic_name), 120, 0.05), "no step 2"
    _kill_9(worker)  # mid-way through making the topic anew
    assert _refused(kafka.SOURCE, topic_name)  # half made, and no client can write to it
    assert peer.mirrors.get(mirror_topic=topic_name).state == State.PENDING_RESTORE

    own_workers()
    eventually(
        lambda: peer.mirrors.get(mirror_topic=topic_name).state == State.ACTIVE, 120, "restored"
    )
    restored = peer.mirrors.get(mirror_topic=topic_name)
    assert restored.stop_report["records_kept"] == {"0": records // 2, "1": records // 2}
    quarantined = read_all(kafka.SOURCE.bootstrap, outcome.quarantine)
    assert sorted(int(r.key) for r in quarantined) == list(range(records, records + 50))  # once
    assert holding not in source.list_topic_names()

    # The restored mirror's stream (started by the worker's beat) killed mid-way through the
    # delta: the next one goes on exactly.
    def copying_delta():
        held = sum(source.end_offsets(topic_name, 2).values())
        running = read_pidfile(streams.folder(str(peer.link_id)) / "stream.pid")
        return running if records < held < records + delta else None

    running = wait_for(copying_delta, 240, 0.05)
    assert running, "the delta was never caught being copied"
    os.killpg(running.pid, signal.SIGKILL)
    run_until_copied(peer, [restored])
    assert read_all(kafka.SOURCE.bootstrap, topic_name) == read_all(
        kafka.DESTINATION.bootstrap, topic_name
    )
    leftovers.delete_topics(kafka.SOURCE, [outcome.quarantine])


def test_a_restore_rebuilds_the_promoted_topics_offsets_over_transaction_gaps_and_lost_records(
    copied_mirror, topic_name
):
    # The old primary's offsets differ from the mirror's: transaction markers and aborted
    # records (never copied), so the mirror translated them.
    link, mirror = copied_mirror(transactional=True)
    promote.stop_mirrors(ACTOR, link, [topic_name], promote.FAILOVER, wait=True)
    source = KafkaAdmin(admin_config(kafka.SOURCE))
    # Since the copy, retention took the old primary's five oldest records of partition 0.
    source.delete_records(topic_name, {0: 5})
    _write(_plain(kafka.SOURCE), topic_name, 100, 6)  # the old primary's, diverging
    _write(_plain(kafka.DESTINATION), topic_name, 200, 4)  # the new primary's
    peer = peer_of(link)

    (outcome,) = restore.truncate_and_restore(ACTOR, peer, [topic_name], wait=True)

    assert outcome.error == "", outcome.error
    assert outcome.messages_truncated == 6
    quarantined = read_all(kafka.SOURCE.bootstrap, outcome.quarantine)
    assert sorted(int(r.key) for r in quarantined) == list(range(100, 106))
    restored = peer.mirrors.get(mirror_topic=topic_name)
    run_until_copied(peer, [restored])
    # The old primary holds the promoted topic at the promoted topic's offsets (40 committed
    # records from offset 0, then the new primary's 2 per partition), partition 0 from its
    # sixth record on.
    promoted = read_all(kafka.DESTINATION.bootstrap, topic_name)
    held = read_all(kafka.SOURCE.bootstrap, topic_name)
    assert held == [r for r in promoted if r.partition == 1 or r.offset >= 5]
    assert source.start_offsets(topic_name, 2) == {0: 5, 1: 0}
    assert source.end_offsets(topic_name, 2) == {0: 42, 1: 42}
    leftovers.delete_topics(kafka.SOURCE, [outcome.quarantine])


def test_a_translated_mirror_reverses_copying_nothing_and_goes_on_after_the_old_sources_end(
    copied_mirror, topic_name
):
    # Transaction markers and aborted records: the mirror holds the 40 committed records of
    # each partition at 0 to 39, its source at offsets up to 65.
    link, mirror = copied_mirror(transactional=True)
    on_source = read_all(kafka.SOURCE.bootstrap, topic_name)
    on_mirror = read_all(kafka.DESTINATION.bootstrap, topic_name)
    source = KafkaAdmin(admin_config(kafka.SOURCE))
    assert source.end_offsets(topic_name, 2) == {0: 66, 1: 66}

    (outcome,) = reverse.reverse_mirrors(ACTOR, link, [topic_name], reverse.START, wait=True)

    assert (outcome.error, outcome.state) == ("", State.STOPPED)
    assert read_all(kafka.SOURCE.bootstrap, topic_name) == on_source  # nothing copied
    assert read_all(kafka.DESTINATION.bootstrap, topic_name) == on_mirror
    reversed_mirror = peer_of(link).mirrors.get(mirror_topic=topic_name)
    # The new primary's records follow on the old source after its own last offset.
    _write(_plain(kafka.DESTINATION), topic_name, 300, 4)
    run_until_copied(peer_of(link), [reversed_mirror])
    new_there = [r for r in read_all(kafka.DESTINATION.bootstrap, topic_name) if r.offset >= 40]
    new_here = [r for r in read_all(kafka.SOURCE.bootstrap, topic_name) if r not in on_source]
    assert [(r.partition, r.offset) for r in new_here] == [(0, 66), (0, 67), (1, 66), (1, 67)]
    assert [(r.partition, r.key, r.value, r.headers, r.timestamp) for r in new_here] == [
        (r.partition, r.key, r.value, r.headers, r.timestamp) for r in new_there
    ]


def test_an_admin_reviews_the_quarantine_in_the_console_and_deletes_it_once_typed(
    copied_mirror, topic_name, client_as
):
    from django.urls import reverse as url

    link, _ = copied_mirror(records=10)
    promote.stop_mirrors(ACTOR, link, [topic_name], promote.FAILOVER, wait=True)
    stray = Producer(_plain(kafka.SOURCE))
    stray.produce(topic_name, key=b"k", value=b"\x1b]0;owned\x07 kept", partition=1)
    assert stray.flush(30) == 0
    peer = peer_of(link)
    (outcome,) = restore.truncate_and_restore(ACTOR, peer, [topic_name], wait=True)
    args = [peer.destination.name, topic_name]
    source = KafkaAdmin(admin_config(kafka.SOURCE))

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
    assert outcome.quarantine in source.list_topic_names()

    admin.post(url("mirror-quarantine-delete", args=args), {"confirm_name": outcome.quarantine})

    eventually(lambda: outcome.quarantine not in source.list_topic_names(), 60, "it deleted")
    done = AuditEvent.objects.get(action="mirror.quarantine_delete", result="ok")
    assert done.actor_name == "admin" and outcome.quarantine in done.message
    page = admin.get(url("mirror-quarantine", args=args)).content.decode()
    assert 'id="quarantine-deleted"' in page and "deleted by admin" in page
