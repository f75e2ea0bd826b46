"""Every Kafka REST v3 route, answered live on the real clusters, read as Confluent's own clients
read it: checked against a JSON Schema written from Confluent's SDK models
(`tests/contracts/confluent_v3_models.json`, with the sources it was read from). Extensions are
allowed; a renamed, missing or retyped field is not. The fields required by either SDK (Confluent
Cloud's and Confluent Platform's) are required. Both API roots answer alike."""

from __future__ import annotations

import json
import uuid

import pytest
from django.test import Client

from devstack import kafka
from infra.kafka_admin import KafkaAdmin
from replication.governance import audit
from replication.governance.tokens import create_token
from replication.topics.mirrors import create_mirror
from tests.conftest import admin_config
from tests.schema_checks import conforms

pytestmark = pytest.mark.integration


@pytest.fixture
def admin(users) -> Client:
    _, secret = create_token(audit.Actor.system("tests"), users["admin"], f"t-{uuid.uuid4().hex}")
    return Client(HTTP_AUTHORIZATION=f"Bearer {secret}")


@pytest.mark.parametrize("root", ["/kafka/v3", "/kafka/destination/v3"])
def test_every_route_answers_as_confluents_sdk_models_read_it(
    root, admin, make_link, make_topic, topic_name
):
    secured = admin_config(kafka.SOURCE)
    link = make_link(  # with a secret, so that a sensitive config is listed too
        {
            "cluster.link.paused": "true",
            "bootstrap.servers": kafka.SOURCE.sasl_bootstrap,
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN",
            "sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule "
            f'required username="{secured["sasl.username"]}" '
            f'password="{secured["sasl.password"]}";',
        }
    )
    actor = audit.Actor.system("tests")
    mirrors = [
        create_mirror(actor, link, make_topic(kafka.SOURCE, f"{topic_name}-{i}", partitions=2))
        for i in range(2)
    ]
    cluster = f"{root}/clusters/{link.destination.cluster_id}"
    base = f"{cluster}/links/{link.name}"
    names = {"mirror_topic_names": [mirrors[0].mirror_topic]}

    def post(tail: str, body: dict):
        return admin.post(f"{base}/{tail}", json.dumps(body), content_type="application/json")

    conforms(admin.get(f"{root}/clusters"), "ClusterDataList")
    conforms(admin.get(cluster), "ClusterData")
    conforms(admin.get(f"{cluster}/links"), "ListLinksResponseDataList")
    conforms(admin.get(f"{base}?include_tasks=true"), "ListLinksResponseData")
    configs = conforms(admin.get(f"{base}/configs"), "ListLinkConfigsResponseDataList")
    by_name = {c["name"]: c for c in configs["data"]}
    assert by_name["sasl.jaas.config"]["sensitive"] and by_name["link.mode"]["read_only"]
    conforms(admin.get(f"{base}/configs/link.mode"), "ListLinkConfigsResponseData")
    conforms(admin.get(f"{cluster}/links/-/mirrors"), "ListMirrorTopicsResponseDataList")
    conforms(admin.get(f"{base}/mirrors"), "ListMirrorTopicsResponseDataList")
    conforms(admin.get(f"{base}/mirrors/{mirrors[0].mirror_topic}"), "ListMirrorTopicsResponseData")
    for action in ("pause", "resume"):
        result = conforms(post(f"mirrors:{action}", names), "AlterMirrorStatusResponseDataList")
        assert [len(r["mirror_lags"]) for r in result["data"]] == [2]  # one row per partition
    conforms(post("mirrors:promote?validate_only=true", names), "AlterMirrorStatusResponseDataList")
    failed_over = conforms(
        post("mirrors:failover", {"mirror_topic_names": [mirrors[1].mirror_topic], "reason": "x"}),
        "AlterMirrorStatusResponseDataList",
    )
    assert failed_over["data"][0]["error_code"] is None, failed_over
    conforms(admin.get(f"{base}/mirrors/nope"), "Error", 404)
    conforms(admin.get(f"{base}/no-such-route"), "Error", 404)


@pytest.mark.parametrize("root", ["/kafka/v3", "/kafka/destination/v3"])
def test_the_clusters_own_read_paths_answer_as_confluents_sdk_models_read_them(
    root, admin, make_link, make_topic, topic_name
):
    """What `confluent kafka topic list|describe`, `consumer group list|describe|lag …` and
    `acl list` read, on a mirror topic and a group that committed an offset on it."""
    mirror = create_mirror(
        audit.Actor.system("tests"), make_link(), make_topic(kafka.SOURCE, topic_name)
    ).mirror_topic
    group = f"{topic_name}-group"
    KafkaAdmin(admin_config(kafka.DESTINATION)).alter_group_offsets({group: {(mirror, 0): 0}})
    cluster = admin.get(f"{root}/clusters").json()["data"][0]["cluster_id"]  # as the CLI finds it
    base = f"{root}/clusters/{cluster}"
    topic, lags = f"{base}/topics/{mirror}", f"{base}/consumer-groups/{group}/lags"

    topics = conforms(admin.get(f"{base}/topics"), "TopicDataList")
    assert mirror in [t["topic_name"] for t in topics["data"]]
    conforms(admin.get(topic), "TopicData")
    conforms(admin.get(f"{topic}/partitions"), "PartitionDataList")
    conforms(admin.get(f"{topic}/partitions/0"), "PartitionData")
    [replica] = conforms(admin.get(f"{topic}/partitions/0/replicas"), "ReplicaDataList")["data"]
    assert replica["is_leader"] and replica["is_in_sync"]
    conforms(admin.get(f"{topic}/configs"), "TopicConfigDataList")
    conforms(admin.get(f"{topic}/configs/cleanup.policy"), "TopicConfigData")
    conforms(admin.get(f"{base}/consumer-groups"), "ConsumerGroupDataList")
    found = conforms(admin.get(f"{base}/consumer-groups/{group}"), "ConsumerGroupData")
    assert found["coordinator"]["related"].rsplit("/brokers/", 1)[1].isdigit()  # what it prints
    conforms(admin.get(f"{base}/consumer-groups/{group}/consumers"), "ConsumerDataList")
    conforms(admin.get(lags), "ConsumerLagDataList")
    conforms(admin.get(f"{lags}/{mirror}/partitions/0"), "ConsumerLagData")
    conforms(
        admin.get(f"{base}/consumer-groups/{group}/lag-summary"), "ConsumerGroupLagSummaryData"
    )
    # The CLI always sends host=* (and upper-cased names) with its filters.
    acls = admin.get(
        f"{base}/acls",
        {"resource_type": "TOPIC", "resource_name": mirror, "operation": "WRITE", "host": "*"},
    )
    assert [a["permission"] for a in conforms(acls, "AclDataList")["data"]] == ["DENY"]
    conforms(admin.get(f"{topic}-nope"), "Error", 404)


def test_a_clusters_own_root_serves_that_cluster_alone(admin, registered_clusters, make_link):
    destination, source = registered_clusters["destination"], registered_clusters["source"]
    link = make_link({"cluster.link.paused": "true"})
    root = f"/kafka/{destination.name}/v3"

    listed = admin.get(f"{root}/clusters").json()["data"]
    assert [c["cluster_id"] for c in listed] == [destination.cluster_id]  # data[0], as Confluent
    assert listed[0]["metadata"]["self"].endswith(f"{root}/clusters/{destination.cluster_id}")
    links = admin.get(f"{root}/clusters/{destination.cluster_id}/links").json()["data"]
    assert link.name in [entry["link_name"] for entry in links]
    assert all(f"{root}/clusters/" in entry["metadata"]["self"] for entry in links)

    other = admin.get(f"{root}/clusters/{source.cluster_id}/links")
    assert other.status_code == 404
    assert f"serves cluster {destination.name}" in other.json()["message"]
    unknown = admin.get("/kafka/no-such-cluster/v3/clusters")
    assert (
        unknown.status_code == 404 and "No registered cluster is named" in unknown.json()["message"]
    )
    assert Client().get(f"{root}/clusters").status_code == 401
