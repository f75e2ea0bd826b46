"""Kafka REST v3's read paths of a cluster, as Confluent's tools call them: a mirror topic with
its partitions and configs, a live consumer group with its members and lag, the mirror's
read-only ACLs by filter; each checked against what the cluster itself says."""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka import Consumer, TopicPartition
from django.test import Client

from devstack import kafka
from infra.kafka_admin import KafkaAdmin
from infra.processes import wait_for
from replication.governance import audit
from replication.governance.tokens import create_token
from replication.topics.mirrors import create_mirror
from tests.conftest import admin_config
from tests.kafka_clients import produce

pytestmark = pytest.mark.integration


@pytest.fixture
def viewer(users) -> Client:
    _, secret = create_token(audit.Actor.system("tests"), users["viewer"], f"t-{uuid.uuid4().hex}")
    return Client(HTTP_AUTHORIZATION=f"Bearer {secret}")


def test_a_viewer_reads_a_mirror_topic_its_partitions_configs_and_read_only_acls(
    viewer, make_link, make_topic, topic_name, registered_clusters
):
    make_topic(kafka.SOURCE, topic_name, partitions=2, **{"retention.ms": "3600000"})
    create_mirror(audit.Actor.system("tests"), make_link(), topic_name)
    root = f"/kafka/v3/clusters/{registered_clusters['destination'].cluster_id}"

    listed = viewer.get(f"{root}/topics").json()["data"]
    [mine] = [t for t in listed if t["topic_name"] == topic_name]
    assert (mine["partitions_count"], mine["replication_factor"], mine["is_mirror"]) == (2, 1, True)
    assert any(t["is_internal"] for t in listed)  # __consumer_offsets
    assert mine["partitions"]["related"].endswith(f"/topics/{topic_name}/partitions")

    partitions = viewer.get(f"{root}/topics/{topic_name}/partitions").json()["data"]
    assert [p["partition_id"] for p in partitions] == [0, 1]
    brokers = KafkaAdmin(admin_config(kafka.DESTINATION)).partition_replicas(topic_name)
    assert [(p["leader_id"], p["replica_ids"], p["isr_ids"]) for p in partitions] == [
        (b.leader, b.replicas, b.isr) for b in brokers
    ]
    assert viewer.get(f"{root}/topics/{topic_name}/partitions/7").status_code == 404

    configs = {
        c["name"]: c for c in viewer.get(f"{root}/topics/{topic_name}/configs").json()["data"]
    }
    retention = configs["retention.ms"]  # synced from the source by the mirror
    assert (retention["value"], retention["is_default"]) == ("3600000", False)
    assert retention["source"] == "DYNAMIC_TOPIC_CONFIG"
    one = viewer.get(f"{root}/topics/{topic_name}/configs/cleanup.policy").json()
    assert one["value"] == "delete" and one["synonyms"]

    acls = viewer.get(f"{root}/acls", {"resource_name": topic_name}).json()["data"]
    assert {(a["operation"], a["permission"]) for a in acls} == {
        ("READ", "ALLOW"),
        ("DESCRIBE", "ALLOW"),
        ("DESCRIBE_CONFIGS", "ALLOW"),
        ("WRITE", "DENY"),
        ("ALTER_CONFIGS", "DENY"),
        ("ALTER", "DENY"),
    }
    assert {a["principal"] for a in acls} == {"User:*"}
    writes = viewer.get(f"{root}/acls", {"resource_name": topic_name, "operation": "write"})
    assert [(a["operation"], a["permission"]) for a in writes.json()["data"]] == [("WRITE", "DENY")]
    wrong = viewer.get(f"{root}/acls", {"operation": "SCRIBBLE"})
    assert wrong.status_code == 400 and "not one of" in wrong.json()["message"]
    # The cluster resource, as Kafka and Confluent's tools name it (librdkafka says BROKER).
    cluster_acls = viewer.get(f"{root}/acls", {"resource_type": "CLUSTER"}).json()["data"]
    assert {a["resource_type"] for a in cluster_acls} <= {"CLUSTER"}
    missing = viewer.get(f"{root}/topics/{topic_name}-nope")
    assert missing.status_code == 404 and "does not exist" in missing.json()["message"]
    assert Client().get(f"{root}/topics").status_code == 401


def test_a_live_consumer_group_shows_its_member_and_its_lag(
    viewer, make_topic, topic_name, registered_clusters
):
    # On the destination, a group reads 1 of 3 records and commits; its member stays.
    make_topic(kafka.DESTINATION, topic_name)
    produce(admin_config(kafka.DESTINATION), topic_name, [{"value": b"r"}] * 3)
    group = f"{topic_name}-g"
    consumer = Consumer(
        {
            **admin_config(kafka.DESTINATION),
            "group.id": group,
            "client.id": "billing-app",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.subscribe([topic_name])
        assert wait_for(lambda: consumer.poll(0.5) is not None, 30)
        consumer.commit(offsets=[TopicPartition(topic_name, 0, 1)], asynchronous=False)
        root = f"/kafka/v3/clusters/{registered_clusters['destination'].cluster_id}"

        found = viewer.get(f"{root}/consumer-groups/{group}").json()
        assert (found["state"], found["is_simple"]) == ("STABLE", False)
        assert group in [
            g["consumer_group_id"] for g in viewer.get(f"{root}/consumer-groups").json()["data"]
        ]
        [member] = viewer.get(f"{root}/consumer-groups/{group}/consumers").json()["data"]
        assert member["client_id"] == "billing-app"
        [lag] = viewer.get(f"{root}/consumer-groups/{group}/lags").json()["data"]
        assert (lag["current_offset"], lag["log_end_offset"], lag["lag"]) == (1, 3, 2)
        assert lag["consumer_id"] == member["consumer_id"]
        summary = viewer.get(f"{root}/consumer-groups/{group}/lag-summary").json()
        assert (summary["max_lag"], summary["total_lag"], summary["max_lag_topic_name"]) == (
            2,
            2,
            topic_name,
        )
    finally:
        consumer.close()
    assert viewer.get(f"{root}/consumer-groups/{group}-nope").status_code == 404
