"""Promote and failover on in-memory clusters: lag refusals that name the partitions, the
refusals of each state, the last config and offset sync of a promote, a failover with the
source down, a stop the engine does not acknowledge put back, and a pause racing a mirror's
failure. That no record of the engine lands after the topic became writable, the diverging
topics and a failover with the source cluster stopped are
tests/integration/test_promote_failover.py, on real brokers."""

from __future__ import annotations

import json

import pytest
from django.test import override_settings

from devstack import kafka
from infra import processes
from replication.cutover import promote
from replication.engine import process
from replication.governance import audit
from replication.models import AuditEvent, MirrorTopic
from replication.topics.mirrors import create_mirror, pause_mirror

State = MirrorTopic.State


def _admin(users) -> audit.Actor:
    return audit.Actor(user=users["admin"], name="admin")


def _state(mirror: MirrorTopic) -> str:
    return MirrorTopic.objects.get(pk=mirror.pk).state


def test_a_pause_racing_a_failure_does_not_overwrite_it(
    db, make_link, make_topic, topic_name, users
):
    from replication.topics.mirrors import fail_mirror

    make_topic(kafka.SOURCE, topic_name, partitions=1)
    link = make_link()
    mirror = create_mirror(_admin(users), link, topic_name)
    stale = MirrorTopic.objects.get(pk=mirror.pk)  # a page loaded before the failure
    fail_mirror(mirror, MirrorTopic.Error.SOURCE_TOPIC_ID_CHANGED, "re-created")
    with pytest.raises(Exception, match="is FAILED now; it cannot be paused"):
        pause_mirror(_admin(users), stale)
    assert _state(mirror) == State.FAILED
    event = AuditEvent.objects.get(action="mirror.pause")
    assert event.result == "refused" and event.actor_name == "admin"


def _fenced(cluster, topic: str) -> bool:
    return any(b.name == topic for b in cluster.acls)


def test_a_lagging_promote_is_refused_by_partition_and_a_caught_up_one_stops_the_mirror(
    db, make_link, make_topic, topic_name, users, memory_clusters
):
    source, destination = memory_clusters["source"], memory_clusters["destination"]
    make_topic(kafka.SOURCE, topic_name, partitions=2)
    filters = {"groupFilters": [{"name": "app", "patternType": "LITERAL", "filterType": "INCLUDE"}]}
    link = make_link(
        {
            "consumer.offset.sync.enable": "true",
            "consumer.offset.group.filters": json.dumps(filters),
        }
    )
    mirror = create_mirror(_admin(users), link, topic_name)
    source.produce(topic_name, 0, 151)
    source.produce(topic_name, 1, 1)
    source.commit("app", {(topic_name, 0): 100})

    [refused] = promote.stop_mirrors(_admin(users), link, [topic_name], promote.PROMOTE)

    assert refused.status == 409 and "partition 0 lags 151 records" in refused.error
    assert "partition 1 lags 1 record." in refused.error
    assert _state(mirror) == State.ACTIVE
    event = AuditEvent.objects.get(action="mirror.promote", result="refused")
    assert event.message == refused.error and event.actor_name == "admin"

    destination.produce(topic_name, 0, 151)
    destination.produce(topic_name, 1, 1)
    # The source's config changed since the last sync: the promote takes it along.
    source.topics[topic_name].configs["retention.ms"] = "3600000"
    [dry_run] = promote.stop_mirrors(
        _admin(users), link, [topic_name], promote.PROMOTE, validate_only=True
    )
    assert dry_run.error == "" and [p.lag for p in dry_run.lags] == [0, 0]
    assert _state(mirror) == State.ACTIVE and _fenced(destination, topic_name)

    [done] = promote.stop_mirrors(_admin(users), link, [topic_name], promote.PROMOTE, wait=True)

    mirror.refresh_from_db()
    assert done.error == "" and mirror.state == State.STOPPED
    assert mirror.stop_offsets == {"0": 151, "1": 1} and mirror.pending_stop is None
    assert mirror.stop_report["kind"] == "promote" and mirror.stop_report["lag"] == {"0": 0, "1": 0}
    # Consumers move with their offsets, synced a last time now that the copy is final.
    assert mirror.stop_report["consumer_offsets"] == "synced a last time: 1 group(s) in step"
    assert destination.groups["app"].offsets == {(topic_name, 0): 100}
    assert destination.topics[topic_name].configs["retention.ms"] == "3600000"
    assert not _fenced(destination, topic_name)  # writable now
    assert AuditEvent.objects.filter(action="mirror.stopped", result="ok").count() == 1

    for kind in (promote.PROMOTE, promote.FAILOVER):
        [again] = promote.stop_mirrors(_admin(users), link, [topic_name], kind)
        assert f"has already stopped its mirror from {link.name!r}" in again.error
    [missing] = promote.stop_mirrors(_admin(users), link, ["no-such"], promote.PROMOTE)
    assert missing.status == 404 and "is not a mirror topic of" in missing.error


def test_with_its_source_down_a_promote_is_refused_and_a_failover_goes_through(
    db, make_link, make_topic, topic_name, users, memory_clusters
):
    make_topic(kafka.SOURCE, topic_name, partitions=1)
    link = make_link()
    mirror = create_mirror(_admin(users), link, topic_name)
    memory_clusters["destination"].produce(topic_name, 0, 3)
    memory_clusters["source"].down = True

    [refused] = promote.stop_mirrors(_admin(users), link, [topic_name], promote.PROMOTE)
    assert refused.status == 409 and "Use failover to stop the mirror without its source" in (
        refused.error
    )

    [done] = promote.stop_mirrors(_admin(users), link, [topic_name], promote.FAILOVER, wait=True)

    mirror.refresh_from_db()
    assert done.error == "" and mirror.state == State.STOPPED and mirror.stop_offsets == {"0": 3}
    assert "consumer_offsets" not in mirror.stop_report  # a failover does not reach the source


def test_a_second_stop_while_one_is_under_way_is_refused(
    db, make_link, make_topic, topic_name, users
):
    make_topic(kafka.SOURCE, topic_name, partitions=1)
    link = make_link()
    mirror = create_mirror(_admin(users), link, topic_name)
    [scheduled] = promote.stop_mirrors(_admin(users), link, [topic_name], promote.FAILOVER)
    assert scheduled.state == State.PENDING_STOPPED

    for kind in (promote.PROMOTE, promote.FAILOVER):
        [refused] = promote.stop_mirrors(_admin(users), link, [topic_name], kind)
        assert refused.status == 409 and "is already stopping its mirror" in refused.error
    assert _state(mirror) == State.PENDING_STOPPED


def test_a_stop_the_engine_does_not_acknowledge_leaves_the_mirror_read_only_as_it_was(
    db, own_engine, make_link, make_topic, topic_name, users, memory_clusters, tmp_path
):
    make_topic(kafka.SOURCE, topic_name, partitions=1)
    link = make_link()
    mirror = create_mirror(_admin(users), link, topic_name)
    pause_mirror(_admin(users), mirror)
    # An "engine" that runs but never reports: it could still be writing.
    pidfile = process.pidfile()
    processes.start(
        ["sleep", "300"], pidfile=pidfile, logfile=tmp_path / "log", env={}, cwd=tmp_path
    )
    try:
        with override_settings(STOP_TIMEOUT_S=1):
            [outcome] = promote.stop_mirrors(
                _admin(users), link, [topic_name], promote.FAILOVER, wait=True
            )
    finally:
        processes.stop(pidfile)

    assert outcome.status == 503 and "did not confirm within 1 s" in outcome.error
    mirror.refresh_from_db()
    assert mirror.state == State.PAUSED and mirror.paused
    assert "did not confirm" in mirror.action_error
    assert _fenced(memory_clusters["destination"], topic_name)  # still read-only
    assert AuditEvent.objects.filter(action="mirror.stop_failed", result="failed").count() == 1
