"""Bidirectional links and the planned switchover (reverse-and-start-mirror,
reverse-and-pause-mirror) on the real clusters: nothing copied, both topics identical record
by record, a fence a super user writes past detected and everything put back, and clear
refusals."""

from __future__ import annotations

import pytest

from devstack import kafka
from infra.kafka_admin import KafkaAdmin
from replication.cutover import reverse
from replication.models import AuditEvent
from replication.topics.links import peer_of
from replication.topics.mirrors import create_mirror
from tests.conftest import admin_config
from tests.db.test_reverse import ACTOR, State
from tests.kafka_clients import ordinary, write_numbered, write_refused
from tests.mirror_checks import eventually, read_all, run_until_copied

pytestmark = pytest.mark.integration


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
    write_numbered(ordinary(kafka.DESTINATION), topic_name, 200, 50)
    assert write_refused(kafka.SOURCE, topic_name)
    run_until_copied(peer, [reversed_mirror])
    after = read_all(kafka.DESTINATION.bootstrap, topic_name)
    assert len(after) == 250
    assert read_all(kafka.SOURCE.bootstrap, topic_name) == after  # record by record, offsets too


def test_reverse_and_pause_leaves_the_old_sources_new_mirror_paused(
    bidirectional, make_topic, topic_name
):
    make_topic(kafka.SOURCE, topic_name)
    write_numbered(ordinary(kafka.SOURCE), topic_name, 0, 10)
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
    assert write_refused(kafka.SOURCE, topic_name)  # fenced
    write_numbered(admin_config(kafka.SOURCE), topic_name, 100, 3)  # a super user: past every ACL

    def settled() -> bool:
        reverse.finish(link)
        mirror.refresh_from_db()
        return mirror.state not in (State.PENDING_SYNCHRONIZE, State.PENDING_STOPPED)

    eventually(settled, 120, "the reverse settling")
    assert mirror.state == State.ACTIVE
    assert "did not hold" in mirror.action_error
    assert not peer_of(link).mirrors.exists()
    # The fence is lifted: writable again.
    write_numbered(ordinary(kafka.SOURCE), topic_name, 103, 1)
    failed = AuditEvent.objects.get(action="mirror.reverse_failed")
    assert "did not hold" in failed.message
    run_until_copied(link, [mirror])  # and the mirror follows it again, every record
    assert read_all(kafka.DESTINATION.bootstrap, topic_name) == read_all(
        kafka.SOURCE.bootstrap, topic_name
    )


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
    write_numbered(ordinary(kafka.DESTINATION), topic_name, 60, 30)  # the burst, on the new primary
    back_mirror = peer.mirrors.get(mirror_topic=topic_name)
    run_until_copied(peer, [back_mirror])
    (back,) = reverse.reverse_mirrors(ACTOR, peer, [topic_name], reverse.START, wait=True)
    assert back.error == ""
    write_numbered(ordinary(kafka.SOURCE), topic_name, 90, 10)  # the original primary again
    again = link.mirrors.get(mirror_topic=topic_name)
    assert again.state == State.ACTIVE and again.pk != mirror.pk
    run_until_copied(link, [again])

    on_source = read_all(kafka.SOURCE.bootstrap, topic_name)
    assert sorted(int(r.key) for r in on_source) == list(range(100))  # each record once
    assert read_all(kafka.DESTINATION.bootstrap, topic_name) == on_source  # offsets identical
    assert not write_refused(kafka.SOURCE, topic_name) and write_refused(
        kafka.DESTINATION, topic_name
    )


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
    write_numbered(ordinary(kafka.DESTINATION), topic_name, 300, 4)
    run_until_copied(peer_of(link), [reversed_mirror])
    new_there = [r for r in read_all(kafka.DESTINATION.bootstrap, topic_name) if r.offset >= 40]
    new_here = [r for r in read_all(kafka.SOURCE.bootstrap, topic_name) if r not in on_source]
    assert [(r.partition, r.offset) for r in new_here] == [(0, 66), (0, 67), (1, 66), (1, 67)]
    assert [(r.partition, r.key, r.value, r.headers, r.timestamp) for r in new_here] == [
        (r.partition, r.key, r.value, r.headers, r.timestamp) for r in new_there
    ]
