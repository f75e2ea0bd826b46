"""Kafka REST v3's broker reads (issue 47), answered as Confluent's SDK models read them
(tests/contracts/confluent_v3_models.json), from an admin that answers as a broker does, put in
at the seam the reads take (`inspection.cluster_admin`): sensitive values never sent, the access
policy's broker_configs.view for configs, a broker the cluster lacks and a cluster that does not
answer said in words. The same reads on the real devstack:
tests/integration/test_broker_reads.py."""

from __future__ import annotations

import pytest

from infra.kafka_brokers import BrokerNode
from infra.kafka_errors import KafkaAdminError
from infra.kafka_topics import ConfigDetail
from replication.kafka import inspection
from tests.schema_checks import conforms

SECRET = "s3cret-keystore-password"
CONFIGS = [
    ConfigDetail("log.retention.hours", "168", "DEFAULT_CONFIG", True, True, False, []),
    ConfigDetail(
        "ssl.keystore.password",
        SECRET,
        "STATIC_BROKER_CONFIG",
        False,
        True,
        True,
        [("ssl.keystore.password", SECRET, "STATIC_BROKER_CONFIG")],
    ),
    ConfigDetail(
        "log.cleaner.threads",
        "2",
        "DYNAMIC_DEFAULT_BROKER_CONFIG",
        False,
        False,
        False,
        [("log.cleaner.threads", "2", "DYNAMIC_DEFAULT_BROKER_CONFIG")],
    ),
]


class Brokers:
    """Answers as the admin adapter does for a cluster of two brokers."""

    def __init__(self, failing: bool = False):
        self.failing = failing

    def brokers(self) -> list[BrokerNode]:
        if self.failing:
            raise KafkaAdminError("Could not describe the cluster: timed out.")
        return [BrokerNode(1, "kafka-1", 9092, "rack-a"), BrokerNode(2, "kafka-2", 9092, None)]

    def broker_config_details(self, broker: int | None) -> list[ConfigDetail]:
        if broker is None:  # the cluster-wide defaults, as the adapter finds them
            return [c for c in CONFIGS if c.source == "DYNAMIC_DEFAULT_BROKER_CONFIG"]
        return CONFIGS


@pytest.fixture
def cluster(registered_clusters, monkeypatch):
    found = registered_clusters["destination"]
    admin = Brokers()
    monkeypatch.setattr(inspection, "cluster_admin", lambda cluster: admin)
    return f"/kafka/v3/clusters/{found.cluster_id}", admin


def test_the_brokers_and_their_configs_answer_in_confluents_shapes(api, cluster):
    base, _ = cluster
    client = api("operator")
    brokers = conforms(client.get(f"{base}/brokers"), "BrokerDataList")["data"]
    assert [(b["broker_id"], b["host"], b["port"], b["rack"]) for b in brokers] == [
        (1, "kafka-1", 9092, "rack-a"),
        (2, "kafka-2", 9092, None),
    ]
    one = conforms(client.get(f"{base}/brokers/2"), "BrokerData")
    assert one["configs"]["related"].endswith(f"{base}/brokers/2/configs")
    configs = conforms(client.get(f"{base}/brokers/1/configs"), "BrokerConfigDataList")["data"]
    assert {c["name"] for c in configs} == {c.name for c in CONFIGS}
    assert all(c["broker_id"] == 1 for c in configs)
    secret = conforms(
        client.get(f"{base}/brokers/1/configs/ssl.keystore.password"), "BrokerConfigData"
    )
    assert secret["is_sensitive"] and secret["value"] is None
    assert secret["synonyms"][0]["value"] is None
    whole = conforms(client.get(f"{base}/broker-configs"), "ClusterConfigDataList")["data"]
    assert [(c["name"], c["config_type"]) for c in whole] == [("log.cleaner.threads", "BROKER")]
    # The cluster's own answer points where these are served.
    found = client.get(base).json()
    assert found["brokers"]["related"].endswith(f"{base}/brokers")
    assert found["broker_configs"]["related"].endswith(f"{base}/broker-configs")


def test_no_answer_anywhere_holds_a_sensitive_value(api, cluster):
    base, _ = cluster
    client = api("admin")
    for path in ("brokers/1/configs", "brokers/1/configs/ssl.keystore.password"):
        assert SECRET not in client.get(f"{base}/{path}").content.decode()


@pytest.mark.parametrize(
    "path,status,expected",
    [
        ("brokers/7", 404, "Broker 7 is not a broker of cluster destination"),
        ("brokers/7/configs", 404, "Broker 7 is not a broker of cluster destination"),
        ("brokers/one", 400, "A broker id is a whole number, like 1, not 'one'"),
        ("brokers/%C2%B2/configs", 400, "A broker id is a whole number, like 1, not '²'"),
        ("brokers/1/configs/nope", 404, "Broker 1 has no config 'nope'"),
        ("topics/-/partitions/-/reassignment", 404, "has no ListPartitionReassignments"),
        ("topics/t/partitions/0/reassignment", 404, "kafka-reassign-partitions --list"),
    ],
)
def test_what_cannot_be_answered_is_said_in_words(api, cluster, path, status, expected):
    base, _ = cluster
    answer = conforms(api("operator").get(f"{base}/{path}"), "Error", status)
    assert expected in answer["message"]


def test_a_cluster_that_does_not_answer_is_a_503_in_words(api, cluster):
    base, admin = cluster
    admin.failing = True
    answer = conforms(api("viewer").get(f"{base}/brokers"), "Error", 503)
    assert "did not answer" in answer["message"] and "timed out" in answer["message"]


def test_broker_configs_are_for_the_roles_the_policy_names(api, cluster):
    base, _ = cluster
    assert api("viewer").get(f"{base}/brokers").status_code == 200
    for path in ("brokers/1/configs", "broker-configs", "brokers/1/configs/log.cleaner.threads"):
        assert api("viewer").get(f"{base}/{path}").status_code == 403
        assert api("approver").get(f"{base}/{path}").status_code == 403
        assert api("operator").get(f"{base}/{path}").status_code == 200
