"""The syncers' decisions on in-memory clusters, called directly to control the moment they
run: a source topic that grows, changes its configs, goes missing, comes back, is re-created
or shrinks; a mirror topic deleted on the destination; a paused link left alone; read-only
rules put back; and records the source deleted before they were copied. The tutorial's config
and partition steps through the real Celery beat, and a stopped source cluster, are
tests/integration/test_syncers.py, on real brokers."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from devstack import kafka
from replication.core import read_only
from replication.governance import audit
from replication.models import AuditEvent, ClusterLink, MirrorTopic
from replication.sync import syncers
from replication.topics.links import pause_link
from replication.topics.mirrors import (
    create_mirror,
    note_records_lost,
    records_lost,
    source_missing,
)
from tests import memory_kafka

ACTOR = audit.Actor.system("tests")


def _admin(cluster: memory_kafka.MemoryCluster) -> memory_kafka.MemoryAdmin:
    return memory_kafka.MemoryAdmin({"bootstrap.servers": cluster.bootstrap})


@pytest.fixture
def mirrored(make_link, make_topic, topic_name):
    """A mirror of a new source topic over a new link: (the link, the mirror)."""

    def make(partitions: int = 1, link_configs: dict | None = None, **configs: str):
        make_topic(kafka.SOURCE, topic_name, partitions, **configs)
        link = make_link(link_configs)
        return link, create_mirror(ACTOR, link, topic_name)

    return make


def test_a_source_that_grows_grows_its_mirror_and_a_changed_config_reaches_it(
    mirrored, topic_name, memory_clusters
):
    link, mirror = mirrored(**{"retention.ms": "1000000"})
    source, destination = memory_clusters["source"], memory_clusters["destination"]
    _admin(source).create_partitions(topic_name, 3)
    _admin(source).alter_topic_configs(topic_name, {"retention.ms": "2000000"}, [])

    syncers.refresh_metadata(link, timezone.now())
    syncers.sync_topic_configs(link, timezone.now())

    mirror.refresh_from_db()
    assert mirror.num_partitions == 3 and len(destination.topics[topic_name].partitions) == 3
    assert destination.topics[topic_name].configs["retention.ms"] == "2000000"
    grown = AuditEvent.objects.get(action="mirror.grow")
    assert grown.before["partitions"] == 1 and grown.after["partitions"] == 3
    synced = AuditEvent.objects.get(action="mirror.sync_configs")
    assert synced.after == {"set": {"retention.ms": "2000000"}, "reset": []}

    # Reset on the source: reset on the mirror; nothing to change the next time.
    _admin(source).alter_topic_configs(topic_name, {}, ["retention.ms"])
    syncers.sync_topic_configs(link, timezone.now())
    syncers.sync_topic_configs(link, timezone.now())
    assert "retention.ms" not in destination.topics[topic_name].configs
    assert AuditEvent.objects.filter(action="mirror.sync_configs").count() == 2


def test_a_deleted_source_topic_fails_the_mirror_after_the_retry_timeout_unless_it_comes_back(
    mirrored, topic_name, memory_clusters
):
    link, mirror = mirrored(link_configs={"cluster.link.retry.timeout.ms": "60000"})
    source = memory_clusters["source"]
    kept = source.topics.pop(topic_name)
    now = timezone.now()

    syncers.refresh_metadata(link, now)

    mirror.refresh_from_db()
    assert mirror.state == "ACTIVE" and mirror.source_missing_since == now  # still retrying
    assert "the mirror fails at" in source_missing(mirror)
    source.topics[topic_name] = kept  # back in time: the mirror goes on
    syncers.refresh_metadata(link, now + timedelta(seconds=30))
    mirror.refresh_from_db()
    assert mirror.source_missing_since is None and source_missing(mirror) == ""

    del source.topics[topic_name]
    syncers.refresh_metadata(link, now)
    syncers.refresh_metadata(link, now + timedelta(seconds=61))

    mirror.refresh_from_db()
    assert (mirror.state, mirror.mirror_error) == ("FAILED", "SOURCE_TOPIC_MAY_BE_DELETED")
    assert "cluster.link.retry.timeout.ms (60000 ms)" in mirror.error_message
    assert AuditEvent.objects.get(action="mirror.fail").result == "failed"


def test_a_recreated_source_topic_fails_the_mirror_with_source_topic_id_changed(
    mirrored, topic_name, memory_clusters
):
    link, mirror = mirrored()
    source = memory_clusters["source"]
    del source.topics[topic_name]
    _admin(source).create_topic(topic_name, 1, None, {})

    syncers.refresh_metadata(link, timezone.now())

    mirror.refresh_from_db()
    assert (mirror.state, mirror.mirror_error) == ("FAILED", "SOURCE_TOPIC_ID_CHANGED")
    assert "was deleted and re-created" in mirror.error_message


def test_a_source_with_fewer_partitions_fails_the_mirror(mirrored, topic_name, memory_clusters):
    link, mirror = mirrored(partitions=2)
    # Kafka cannot shrink a topic; a mirror grown by hand has more partitions than its source.
    _admin(memory_clusters["destination"]).create_partitions(topic_name, 3)

    syncers.refresh_metadata(link, timezone.now())

    mirror.refresh_from_db()
    assert (mirror.state, mirror.mirror_error) == ("FAILED", "SOURCE_PARTITIONS_DECREASED")
    assert "2 partitions, fewer than the mirror's 3" in mirror.error_message


def test_a_mirror_topic_deleted_on_the_destination_ends_its_mirroring(
    mirrored, topic_name, memory_clusters
):
    link, mirror = mirrored()
    destination = memory_clusters["destination"]
    # An ordinary topic delete by an administrator, as Cluster Linking users end a mirror.
    del destination.topics[topic_name]

    syncers.refresh_metadata(link, timezone.now())

    assert not MirrorTopic.objects.filter(pk=mirror.pk).exists()
    assert ClusterLink.objects.filter(pk=link.pk).exists()
    assert not any(b.name == topic_name for b in destination.acls)  # its rules lifted
    assert AuditEvent.objects.filter(action="mirror.forget").exists()


def test_a_paused_link_is_not_synced(mirrored, topic_name, memory_clusters):
    link, _ = mirrored()
    pause_link(ACTOR, link)
    _admin(memory_clusters["source"]).create_partitions(topic_name, 2)

    syncers.sync_link(link, timezone.now())

    assert len(memory_clusters["destination"].topics[topic_name].partitions) == 1


def test_the_syncer_puts_back_the_read_only_rules_a_mirror_lacks(
    mirrored, topic_name, memory_clusters
):
    link, _ = mirrored()
    destination = memory_clusters["destination"]
    admin = _admin(destination)
    complete = set(read_only.present(admin, topic_name))
    # Removed by hand (or a mirror made before the rule existed): anyone could add partitions.
    read_only.lift(admin, topic_name, keep=complete - {next(iter(complete))})
    assert not read_only.complete(admin, topic_name)

    syncers.refresh_metadata(link, timezone.now())

    assert read_only.present(admin, topic_name) == complete


def test_records_the_source_deleted_before_the_copy_are_merged_said_and_audited(mirrored):
    _, mirror = mirrored(partitions=2)

    assert note_records_lost(mirror, {0: (0, 5)})
    assert note_records_lost(mirror, {0: (3, 8), 1: (2, 3)})
    assert not note_records_lost(mirror, {0: (4, 6)})  # nothing new

    mirror.refresh_from_db()
    assert mirror.records_lost == {"0": [0, 8], "1": [2, 3]}
    said = records_lost(mirror)
    assert said.startswith("9 source records were deleted at the source (retention)")
    assert "partition 0 offsets 0 to 7, partition 1 offsets 2 to 2" in said
    assert AuditEvent.objects.filter(action="mirror.records_lost", result="failed").count() == 2


def test_a_loss_two_detectors_find_at_once_is_said_once(mirrored):
    """The lag samples and the verification, each holding the mirror as it was before."""
    _, mirror = mirrored()
    other = MirrorTopic.objects.get(pk=mirror.pk)

    assert note_records_lost(mirror, {0: (0, 5)})
    assert not note_records_lost(other, {0: (0, 5)})

    assert other.records_lost == {"0": [0, 5]}
    assert AuditEvent.objects.filter(action="mirror.records_lost").count() == 1
