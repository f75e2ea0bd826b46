"""The syncers against the real clusters.

The tutorial's steps and the availability check run through the real path: Celery beat in a
real worker, which sees only committed rows (hence `transactional_db`). The failure cases call
the syncers directly, to control the moment they run.
"""

import time
from datetime import timedelta

import pytest
from confluent_kafka.admin import AclOperation, AclPermissionType, AdminClient, NewPartitions
from django.utils import timezone

from devstack import kafka
from infra.kafka_admin import KafkaAdmin
from infra.processes import wait_for
from replication import audit, read_only
from replication.links import pause_link
from replication.mirrors import create_mirror
from replication.models import AuditEvent, ClusterLink, MirrorTopic
from replication.sync import syncers
from tests.conftest import admin_config
from tests.kafka_clients import READ_ONLY_ACLS, acls_on, run_tool

pytestmark = pytest.mark.integration

ACTOR = audit.Actor.system("tests")


def mirror_configs(topic: str) -> dict[str, str]:
    configs = KafkaAdmin(admin_config(kafka.DESTINATION)).topic_configs(topic)
    return {k: v.value for k, v in configs.items() if v.is_set}


def mirror_partitions(topic: str) -> int:
    return KafkaAdmin(admin_config(kafka.DESTINATION)).describe_topic(topic).partitions


def test_the_tutorials_config_step_reaches_the_mirror_within_one_sync_interval(
    transactional_db, celery_worker, make_link, make_topic, topic_name
):
    make_topic(kafka.SOURCE, topic_name)
    create_mirror(ACTOR, make_link({"metadata.max.age.ms": "5000"}), topic_name)
    assert "retention.ms" not in mirror_configs(topic_name)

    altered = run_tool(
        "kafka-configs",
        "--alter",
        "--topic",
        topic_name,
        "--add-config",
        "retention.ms=123456890",
        "--bootstrap-server",
        "localhost:9092",
    )
    assert altered.stdout.strip() == f"Completed updating config for topic {topic_name}."
    started = time.monotonic()
    # topic.config.sync.ms defaults to 5000; beat looks for due work every second.
    assert wait_for(lambda: mirror_configs(topic_name).get("retention.ms") == "123456890", 8)
    assert time.monotonic() - started < 7

    described = run_tool(
        "kafka-configs", "--describe", "--topic", topic_name, "--bootstrap-server", "localhost:9093"
    )
    assert "retention.ms=123456890 sensitive=false" in described.stdout
    assert "cleanup.policy=delete sensitive=false" in described.stdout

    # Removing it on the source removes it from the mirror: the destination default applies.
    run_tool(
        "kafka-configs",
        "--alter",
        "--topic",
        topic_name,
        "--delete-config",
        "retention.ms",
        "--bootstrap-server",
        "localhost:9092",
    )
    assert wait_for(lambda: "retention.ms" not in mirror_configs(topic_name), 8)


def test_the_tutorials_partition_step_grows_the_mirror_within_metadata_max_age(
    transactional_db, celery_worker, make_link, make_topic, topic_name
):
    make_topic(kafka.SOURCE, topic_name)
    create_mirror(ACTOR, make_link({"metadata.max.age.ms": "5000"}), topic_name)

    altered = run_tool(
        "kafka-topics",
        "--alter",
        "--topic",
        topic_name,
        "--partitions",
        "8",
        "--bootstrap-server",
        "localhost:9092",
    )
    assert altered.returncode == 0, altered.stderr
    started = time.monotonic()
    assert wait_for(lambda: mirror_partitions(topic_name) == 8, 8)
    assert time.monotonic() - started < 7

    described = run_tool(
        "kafka-topics", "--describe", "--topic", topic_name, "--bootstrap-server", "localhost:9093"
    )
    assert "PartitionCount: 8" in described.stdout
    # The engine grows the topic as soon as it sees the source grow; the syncer records it.
    assert wait_for(lambda: MirrorTopic.objects.get(mirror_topic=topic_name).num_partitions == 8, 8)
    assert AuditEvent.objects.filter(action="mirror.grow", actor_name="system (syncer)").exists()


@pytest.mark.serial
def test_a_stopped_source_makes_the_link_unavailable_and_it_recovers_by_itself(
    transactional_db, celery_worker, devstack, make_link, make_topic, topic_name
):
    make_topic(kafka.SOURCE, topic_name)
    link = make_link(
        {"availability.check.ms": "1000", "availability.check.consecutive.failure.threshold": "2"}
    )
    mirror = create_mirror(ACTOR, link, topic_name)

    def states():
        link.refresh_from_db()
        mirror.refresh_from_db()
        return link.state, mirror.state

    devstack.down(["source"], echo=lambda _: None)
    try:
        assert wait_for(lambda: states() == ("UNAVAILABLE", "SOURCE_UNAVAILABLE"), 60)
        assert link.error_code in ("BOOTSTRAP_TCP_CONNECTION_FAILED_ERROR", "TIMEOUT_ERROR")
        assert kafka.SOURCE.bootstrap in link.error_message
    finally:
        devstack.up(["source"], echo=lambda _: None)
    assert wait_for(lambda: states() == ("ACTIVE", "ACTIVE"), 60)
    assert (link.error_code, link.error_message) == ("NO_ERROR", "")
    newest_first = AuditEvent.objects.filter(actor_name="system (availability check)")
    assert list(newest_first.values_list("action", flat=True)[:2]) == [
        "link.available",
        "link.unavailable",
    ]


# Failure cases, with the syncers called directly. ------------------------------------------


def source_admin() -> AdminClient:
    return AdminClient(admin_config(kafka.SOURCE))


def test_a_deleted_source_topic_fails_the_mirror_after_the_retry_timeout(
    make_link, make_topic, topic_name
):
    make_topic(kafka.SOURCE, topic_name)
    link = make_link({"cluster.link.retry.timeout.ms": "60000"})
    mirror = create_mirror(ACTOR, link, topic_name)
    admin = source_admin()
    admin.delete_topics([topic_name])[topic_name].result(timeout=30)
    now = timezone.now()
    assert wait_for(
        lambda: (
            syncers.refresh_metadata(link, now)
            or MirrorTopic.objects.get(pk=mirror.pk).source_missing_since
        ),
        30,
    )
    assert MirrorTopic.objects.get(pk=mirror.pk).state == "ACTIVE"  # still retrying

    syncers.refresh_metadata(link, now + timedelta(seconds=61))
    mirror.refresh_from_db()
    assert (mirror.state, mirror.mirror_error) == ("FAILED", "SOURCE_TOPIC_MAY_BE_DELETED")
    assert "cluster.link.retry.timeout.ms" in mirror.error_message


def test_a_recreated_source_topic_fails_the_mirror_with_source_topic_id_changed(
    make_link, make_topic, topic_name
):
    make_topic(kafka.SOURCE, topic_name)
    mirror = create_mirror(ACTOR, make_link(), topic_name)
    admin = source_admin()
    admin.delete_topics([topic_name])[topic_name].result(timeout=30)

    def recreated():
        try:
            make_topic(kafka.SOURCE, topic_name)
            return True
        except Exception:  # the deletion is still going on
            return False

    assert wait_for(recreated, 30)
    syncers.refresh_metadata(mirror.link, timezone.now())
    mirror.refresh_from_db()
    assert (mirror.state, mirror.mirror_error) == ("FAILED", "SOURCE_TOPIC_ID_CHANGED")


def test_a_source_with_fewer_partitions_fails_the_mirror(make_link, make_topic, topic_name):
    make_topic(kafka.SOURCE, topic_name, partitions=2)
    mirror = create_mirror(ACTOR, make_link(), topic_name)
    # Kafka cannot shrink a topic; a mirror grown by hand has more partitions than its source.
    admin = AdminClient(admin_config(kafka.DESTINATION))
    admin.create_partitions([NewPartitions(topic_name, 3)])[topic_name].result(timeout=30)
    # A broker may answer from metadata older than the new partitions for a moment.
    assert wait_for(lambda: mirror_partitions(topic_name) == 3, 30)
    syncers.refresh_metadata(mirror.link, timezone.now())
    mirror.refresh_from_db()
    assert (mirror.state, mirror.mirror_error) == ("FAILED", "SOURCE_PARTITIONS_DECREASED")
    assert "2 partitions, fewer than the mirror's 3" in mirror.error_message


def test_a_mirror_topic_deleted_on_the_destination_ends_its_mirroring(
    make_link, make_topic, topic_name
):
    make_topic(kafka.SOURCE, topic_name)
    mirror = create_mirror(ACTOR, make_link(), topic_name)
    # An ordinary topic delete by an administrator, as Cluster Linking users end a mirror.
    admin = AdminClient(admin_config(kafka.DESTINATION))
    admin.delete_topics([topic_name])[topic_name].result(timeout=30)

    def forgotten():
        syncers.refresh_metadata(mirror.link, timezone.now())
        return not MirrorTopic.objects.filter(pk=mirror.pk).exists()

    assert wait_for(forgotten, 30)
    assert ClusterLink.objects.filter(pk=mirror.link.pk).exists()


def test_a_paused_link_is_not_synced(make_link, make_topic, topic_name):
    make_topic(kafka.SOURCE, topic_name, **{"retention.ms": "1000000"})
    link = make_link()
    create_mirror(ACTOR, link, topic_name)
    pause_link(ACTOR, link)
    admin = source_admin()
    admin.create_partitions([NewPartitions(topic_name, 2)])[topic_name].result(timeout=30)
    syncers.sync_link(link, timezone.now())
    assert mirror_partitions(topic_name) == 1


def test_the_syncer_puts_back_the_read_only_rules_a_mirror_lacks(make_link, make_topic, topic_name):
    make_topic(kafka.SOURCE, topic_name)
    link = make_link()
    create_mirror(ACTOR, link, topic_name)
    destination = KafkaAdmin(admin_config(kafka.DESTINATION))
    # Removed by hand (or a mirror made before the rule existed): anyone could add partitions.
    deny_alter = (AclOperation.ALTER, AclPermissionType.DENY)
    read_only.lift(
        destination, topic_name, keep=read_only.present(destination, topic_name) - {deny_alter}
    )
    assert wait_for(
        lambda: acls_on(kafka.DESTINATION, topic_name) == READ_ONLY_ACLS - {("ALTER", "DENY")}, 10
    )

    syncers.refresh_metadata(link, timezone.now())

    assert wait_for(lambda: acls_on(kafka.DESTINATION, topic_name) == READ_ONLY_ACLS, 10)
