"""The syncers against the real clusters.

The tutorial's steps and the availability check run through the real path: Celery beat in a
real worker, which sees only committed rows (hence `transactional_db`). What the syncers decide
when a source topic goes missing, is re-created or shrinks, a mirror topic is deleted or loses
its read-only rules, is tests/db/test_syncers.py, on in-memory clusters.
"""

import time

import pytest

from devstack import kafka
from infra.admin_client import AdminClient
from infra.kafka_admin import KafkaAdmin
from infra.processes import wait_for
from replication.governance import audit
from replication.models import AuditEvent, MirrorTopic
from replication.topics.mirrors import create_mirror
from tests.conftest import admin_config
from tests.kafka_clients import run_tool

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
