"""Kafka REST v3's broker reads on the real devstack broker (issue 47): what `confluent kafka
broker list / describe` and `confluent kafka cluster configuration list` read, as Confluent's
SDK models read it. The devstack sets min.insync.replicas for every broker of a cluster (a
dynamic cluster-wide default), so broker-configs has it; sensitive values are never sent. The
shapes and refusals on in-memory clusters: tests/db/test_api_brokers.py."""

from __future__ import annotations

import pytest

from tests.schema_checks import conforms

pytestmark = pytest.mark.integration

DEFAULT = "min.insync.replicas"


def test_the_real_brokers_and_their_configs_read_as_confluents_sdk_reads_them(
    api, registered_clusters
):
    client = api("operator")
    base = f"/kafka/v3/clusters/{registered_clusters['destination'].cluster_id}"
    brokers = conforms(client.get(f"{base}/brokers"), "BrokerDataList")["data"]
    assert brokers and all(b["host"] and b["port"] for b in brokers)
    first = brokers[0]["broker_id"]
    conforms(client.get(f"{base}/brokers/{first}"), "BrokerData")
    configs = conforms(client.get(f"{base}/brokers/{first}/configs"), "BrokerConfigDataList")
    by_name = {c["name"]: c for c in configs["data"]}
    assert by_name["log.retention.hours"]["value"]
    sensitive = [c for c in configs["data"] if c["is_sensitive"]]
    assert sensitive and all(c["value"] is None for c in sensitive)  # the listeners' JAAS
    one = conforms(client.get(f"{base}/brokers/{first}/configs/{DEFAULT}"), "BrokerConfigData")
    assert one["source"] == "DYNAMIC_DEFAULT_BROKER_CONFIG"
    whole = conforms(client.get(f"{base}/broker-configs"), "ClusterConfigDataList")["data"]
    assert (DEFAULT, one["value"], "BROKER") in {
        (c["name"], c["value"], c["config_type"]) for c in whole
    }
