"""The seed's three-broker demo (002), typed as it is written, hosts and ports adapted only:
Kafka's `kafka-cluster cluster-id`, a link made from a properties file naming the source's three
brokers, the link listed and its configs described, a topic of three replicas and
min.insync.replicas=2, its mirror, and Kafka's console producer and consumer."""

from __future__ import annotations

import re

import pytest

from devstack import kafka
from infra.kafka_admin import KafkaAdmin
from replication.engine import supervise
from replication.topics.links import get_link
from replication.topics.mirrors import get_mirror
from tests import leftovers
from tests.conftest import admin_config
from tests.integration.test_cli import ok
from tests.kafka_clients import run_tool
from tests.mirror_checks import run_until_copied

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

TOPIC = "demo-perf-topic"


def _broker(node: kafka.KafkaNode, n: int) -> str:
    return f"localhost:{node.brokers[n - 1].plaintext_port}"


@pytest.fixture
def seed_topic(devstack):
    """The seed's topic name, free on both clusters before and after."""
    for node in kafka.NODES:
        leftovers.delete_topics(node, [TOPIC])
    yield TOPIC
    for node in kafka.NODES:
        leftovers.delete_topics(node, [TOPIC])


def test_the_three_broker_demo_runs_as_written(typed, registered_clusters, tmp_path, seed_topic):
    broker1, broker4 = _broker(kafka.SOURCE, 1), _broker(kafka.DESTINATION, 1)
    source_id, destination_id = (
        ok(run_tool("kafka-cluster", "cluster-id", "--bootstrap-server", broker))
        for broker in (broker1, broker4)
    )
    assert re.fullmatch(r"Cluster ID: \S+", source_id[0]), source_id
    source_id, destination_id = source_id[0].split()[-1], destination_id[0].split()[-1]
    assert source_id == registered_clusters["source"].cluster_id
    assert destination_id == registered_clusters["destination"].cluster_id

    config = tmp_path / "link-config.properties"
    brokers = ",".join(_broker(kafka.SOURCE, n) for n in (1, 2, 3))
    config.write_text(f"bootstrap.servers={brokers}\nsasl.mechanism=PLAIN\n")
    assert ok(
        typed(
            f"kafka-cluster-links --bootstrap-server {broker4} --create --link ab-link "
            f"--config-file {config} --cluster-id {source_id}"
        )
    ) == ["Cluster link 'ab-link' creation successfully completed."]
    link = get_link(registered_clusters["destination"], "ab-link")
    (listed,) = ok(typed(f"kafka-cluster-links --list --bootstrap-server {broker4}"))
    assert listed == (
        f"Link name: 'ab-link', link ID: '{link.link_id}', remote cluster ID: '{source_id}', "
        f"local cluster ID: '{destination_id}', remote cluster available: 'true'"
    )
    described = ok(
        typed(f"kafka-configs --bootstrap-server {broker4} --describe --cluster-link ab-link")
    )
    assert described[0] == "Dynamic configs for cluster-link ab-link are:"
    assert f"  bootstrap.servers={brokers} sensitive=false synonyms={{}}" in described

    assert ok(
        run_tool(
            "kafka-topics",
            "--bootstrap-server",
            broker1,
            "--topic",
            TOPIC,
            "--replication-factor",
            "3",
            "--partitions",
            "1",
            "--create",
            "--config",
            "min.insync.replicas=2",
        )
    ) == [f"Created topic {TOPIC}."]
    assert ok(
        typed(
            f"kafka-mirrors --create --mirror-topic {TOPIC} --link ab-link "
            f"--bootstrap-server {broker4}"
        )
    ) == [f"Created topic {TOPIC}."]
    (replicas,) = KafkaAdmin(admin_config(kafka.DESTINATION)).partition_replicas(TOPIC)
    assert sorted(replicas.replicas) == [1, 2, 3] and len(replicas.isr) == 3
    mirror_configs = KafkaAdmin(admin_config(kafka.DESTINATION)).topic_configs(TOPIC)
    assert mirror_configs["min.insync.replicas"].value == "2"

    lines = [f"hello from the first cluster {i}" for i in range(20)]
    run_tool(
        "kafka-console-producer",
        "--bootstrap-server",
        broker1,
        "--topic",
        TOPIC,
        stdin="\n".join(lines) + "\n",
    )
    mirror = get_mirror(registered_clusters["destination"], TOPIC, link)
    supervise.supervise(link)
    run_until_copied(link, [mirror])
    consumer_config = tmp_path / "consumer.properties"
    consumer_config.write_text("sasl.mechanism=PLAIN\n")
    consumed = run_tool(
        "kafka-console-consumer",
        "--bootstrap-server",
        broker4,
        "--consumer.config",
        str(consumer_config),
        "--from-beginning",
        "--topic",
        TOPIC,
        "--max-messages",
        str(len(lines)),
        "--timeout-ms",
        "60000",
    )
    # Kafka 4's consumer says on stdout that --consumer.config has a new name; the rest are
    # the records.
    records = [x for x in consumed.stdout.splitlines() if not x.startswith("Option --consumer")]
    assert records == lines, consumed.stderr
