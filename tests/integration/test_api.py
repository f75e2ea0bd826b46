"""The JSON API on Kafka REST v3 paths, against the real devstack clusters."""

from __future__ import annotations

import pytest

from devstack import kafka
from replication.models import AuditEvent, MirrorTopic
from tests.db.test_api import (
    assert_error,
    links_url,  # noqa: F401 (fixtures)
    send,
)
from tests.kafka_clients import produce

pytestmark = pytest.mark.integration


# Authentication and roles ------------------------------------------------------------------


def test_link_configs_are_listed_set_reset_and_altered_in_batches(api, make_link, links_url):
    from tests.conftest import admin_config

    secured = admin_config(kafka.SOURCE)
    password = secured["sasl.password"]
    link = make_link(
        {
            "bootstrap.servers": kafka.SOURCE.sasl_bootstrap,
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN",
            "sasl.jaas.config": (
                "org.apache.kafka.common.security.plain.PlainLoginModule required "
                f'username="{secured["sasl.username"]}" password="{password}";'
            ),
        }
    )
    operator = api("operator")
    configs = f"{links_url}/{link.name}/configs"

    listed = {c["name"]: c for c in operator.get(configs).json()["data"]}
    secret = listed["sasl.jaas.config"]
    assert secret["value"] == "" and secret["is_sensitive"] is secret["sensitive"] is True
    assert password.encode() not in operator.get(configs).content
    assert listed["metadata.max.age.ms"]["is_default"] is True
    assert listed["link.mode"]["is_read_only"] is listed["link.mode"]["read_only"] is True

    assert (
        send(operator, "put", f"{configs}/metadata.max.age.ms", {"value": "7000"}).status_code
        == 204
    )
    one = operator.get(f"{configs}/metadata.max.age.ms").json()
    assert (one["value"], one["is_default"], one["source"]) == (
        "7000",
        False,
        "DYNAMIC_CLUSTER_LINK_CONFIG",
    )
    assert operator.delete(f"{configs}/metadata.max.age.ms").status_code == 204
    assert operator.get(f"{configs}/metadata.max.age.ms").json()["is_default"] is True

    batch = {
        "data": [
            {"name": "topic.config.sync.ms", "value": "2000", "operation": "SET"},
            {"name": "cluster.link.retry.timeout.ms", "operation": "DELETE"},
        ]
    }
    assert send(operator, "put", f"{configs}:alter?validate_only=true", batch).status_code == 204
    link.refresh_from_db()
    assert "topic.config.sync.ms" not in link.configs
    assert send(operator, "put", f"{configs}:alter", batch).status_code == 204
    link.refresh_from_db()
    assert link.configs["topic.config.sync.ms"] == "2000"

    assert_error(operator.get(f"{configs}/no.such"), 404, "Valid link configs")
    assert_error(
        send(operator, "put", f"{configs}:alter", {"data": [{"name": "x", "operation": "ADD"}]}),
        400,
        "SET or DELETE",
    )
    assert_error(
        send(operator, "put", f"{configs}/cluster.link.prefix", {"value": "p."}),
        400,
        "cannot be changed",
    )


def test_mirrors_are_created_described_listed_paused_and_resumed(
    api, make_link, make_topic, topic_name, links_url
):
    link = make_link()
    make_topic(kafka.SOURCE, topic_name, partitions=2)
    produce(
        {"bootstrap.servers": kafka.SOURCE.bootstrap},
        topic_name,
        [{"key": b"k", "value": b"v", "partition": p} for p in (0, 1, 1)],
    )
    operator = api("operator")
    mirrors = f"{links_url}/{link.name}/mirrors"

    body = {"source_topic_name": topic_name, "configs": [{"name": "retention.ms", "value": "9000"}]}
    assert send(operator, "post", mirrors, body).status_code == 204

    data = operator.get(f"{mirrors}/{topic_name}").json()
    mirror = MirrorTopic.objects.get(mirror_topic=topic_name)
    assert data["kind"] == "KafkaMirrorData"
    assert (data["link_name"], data["source_topic_name"], data["mirror_status"]) == (
        link.name,
        topic_name,
        "ACTIVE",
    )
    assert data["num_partitions"] == 2
    assert data["source_topic_id"] == mirror.source_topic_id
    lags = {entry["partition"]: entry for entry in data["mirror_lags"]}
    assert sorted(lags) == [0, 1]
    # No stream runs for a link this test's transaction hides from Celery: all three are lag.
    assert sum(e["source_high_watermark"] for e in lags.values()) == 3
    assert sum(e["lag"] for e in lags.values()) == 3
    assert all(e["dest_log_end_offset"] == 0 for e in lags.values())
    assert data["state_time_ms"] == int(mirror.state_time.timestamp() * 1000)

    everywhere = operator.get(f"{links_url}/-/mirrors").json()
    assert topic_name in [m["mirror_topic_name"] for m in everywhere["data"]]
    assert operator.get(f"{mirrors}?mirror_status=PAUSED").json()["data"] == []

    pause = send(
        operator, "post", f"{mirrors}:pause", {"mirror_topic_names": [topic_name, "not-a-mirror"]}
    )
    assert pause.status_code == 200
    results = {r["mirror_topic_name"]: r for r in pause.json()["data"]}
    assert results[topic_name]["error_code"] is None
    # each partition's lag, as Confluent's tools print after a pause
    paused_lags = results[topic_name]["mirror_lags"]
    assert [e["partition"] for e in paused_lags] == sorted(lags)
    assert sum(e["lag"] for e in paused_lags) == 3
    assert results["not-a-mirror"]["mirror_lags"] == []
    event = AuditEvent.objects.filter(action="mirror.pause").first()
    assert (event.actor.username, event.result, event.target) == (
        "operator",
        "ok",
        f"mirror {topic_name}",
    )
    assert event.actor_name.startswith("operator (API token 'operator token ")
    assert results["not-a-mirror"]["error_code"] == 404
    assert "not a mirror topic" in results["not-a-mirror"]["error_message"]
    assert [
        m["mirror_topic_name"]
        for m in operator.get(f"{mirrors}?mirror_status=PAUSED").json()["data"]
    ] == [topic_name]

    again = send(operator, "post", f"{mirrors}:pause", {"mirror_topic_name_pattern": ".*"})
    assert again.json()["data"][0]["error_code"] == 409
    assert "already paused" in again.json()["data"][0]["error_message"]

    checked = send(
        operator,
        "post",
        f"{mirrors}:resume?validate_only=true",
        {"mirror_topic_names": [topic_name]},
    )
    assert checked.json()["data"][0]["error_code"] is None
    mirror.refresh_from_db()
    assert mirror.state == MirrorTopic.State.PAUSED
    resumed = send(operator, "post", f"{mirrors}:resume", {"mirror_topic_names": [topic_name]})
    assert resumed.json()["data"][0]["error_code"] is None
    mirror.refresh_from_db()
    assert mirror.state == MirrorTopic.State.ACTIVE
