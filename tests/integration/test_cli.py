"""The Confluent-compatible command-line tools, typed as the seed tutorial writes them, as
processes of their own, against a live console and the real clusters, with Kafka's own tools as
the judge. What they validate, pause, alter, ask approval for and refuse is tests/db/test_cli.py,
on in-memory clusters."""

from __future__ import annotations

import re
import subprocess

import pytest
from confluent_kafka.admin import NewTopic

from devstack import kafka
from infra.admin_client import AdminClient
from infra.kafka_admin import KafkaAdmin
from isthmus_cli.replica_status import COLUMNS, MIRROR_COLUMNS
from replication.core import read_only
from replication.models import ClusterLink, MirrorTopic
from tests import leftovers
from tests.conftest import admin_config
from tests.kafka_clients import READ_ONLY_ACLS, acls_on, produce, run_tool
from tests.mirror_checks import eventually

pytestmark = pytest.mark.integration

# The tutorial's topic `demo`, made this session's own (see `demo_topic`).
DEMO = leftovers.unique_name("demo")


def _drop_topic(node: kafka.KafkaNode, name: str) -> None:
    """Delete `name` (and its read-only ACLs) and wait until the cluster no longer lists it."""
    client = AdminClient(admin_config(node))
    if name in client.list_topics(timeout=10).topics:
        client.delete_topics([name])[name].result(timeout=30)
    read_only.lift(KafkaAdmin(admin_config(node), timeout=10), name)
    eventually(
        lambda: name not in client.list_topics(timeout=10).topics, 30, f"{name} being deleted"
    )


@pytest.fixture
def demo_topic(devstack):
    """The tutorial's topic `demo`, fresh on the source and absent from the destination.

    Named DEMO, not `demo`: the clusters may be a user's `make demo` stack, whose `demo` topic
    (the tutorial's) is theirs, not the tests'."""
    for node in kafka.NODES:  # what an earlier test of the module may have left
        _drop_topic(node, DEMO)
    client = AdminClient(admin_config(kafka.SOURCE))  # kept alive until the answer comes
    client.create_topics([NewTopic(DEMO, 1, 1)])[DEMO].result(timeout=30)
    yield DEMO
    for node in kafka.NODES:
        _drop_topic(node, DEMO)


def ok(result: subprocess.CompletedProcess) -> list[str]:
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def test_the_tutorial_link_and_mirror_commands_work_as_written(
    typed, demo_topic, registered_clusters
):
    produce(
        {"bootstrap.servers": kafka.SOURCE.bootstrap},
        DEMO,
        [{"value": v} for v in (b"first", b"second", b"third")],
    )
    source_id = registered_clusters["source"].cluster_id
    destination_id = registered_clusters["destination"].cluster_id

    assert ok(
        typed(
            "kafka-cluster-links --bootstrap-server localhost:9093 --create --link demo-link "
            "--config bootstrap.servers=localhost:9092,metadata.max.age.ms=5000"
        )
    ) == ["Cluster link 'demo-link' creation successfully completed."]
    link = ClusterLink.objects.get(name="demo-link")
    assert link.configs == {"bootstrap.servers": "localhost:9092", "metadata.max.age.ms": "5000"}
    assert link.source_cluster_id == source_id

    assert ok(
        typed(
            f"kafka-mirrors --create --mirror-topic {DEMO} --link demo-link "
            "--bootstrap-server localhost:9093"
        )
    ) == [f"Created topic {DEMO}."]
    assert acls_on(kafka.DESTINATION, DEMO) == READ_ONLY_ACLS
    described = ok(
        run_tool(
            "kafka-topics",
            "--describe",
            "--topic",
            DEMO,
            "--bootstrap-server",
            "localhost:9093",
        )
    )
    assert "PartitionCount: 1" in described[0]

    assert ok(
        typed(
            "kafka-cluster-links --list --link demo-link --include-topics "
            "--bootstrap-server localhost:9093"
        )
    ) == [
        f"Link name: 'demo-link', link ID: '{link.link_id}', remote cluster ID: '{source_id}', "
        f"local cluster ID: '{destination_id}', remote cluster available: 'true', topics: [{DEMO}]"
    ]

    # As the seed shows it: the local replica ("-") and the one over the link, its lag from the
    # stream (it may have copied some by now, as the test worker's beat starts it).
    header, local, linked = ok(
        typed(
            f"kafka-replica-status --topics {DEMO} --include-linked "
            "--bootstrap-server localhost:9093"
        )
    )
    assert header.split() == COLUMNS[:3] + ["ClusterLink"] + COLUMNS[3:]
    local, linked = local.split(), linked.split()
    assert local[:4] == [DEMO, "0", local[2], "-"] and local[4:10] == ["true", "false"] + [
        "true"
    ] * 3 + ["0"]
    assert linked[:8] == [DEMO, "0", local[2], "demo-link", "true", "false", "true", "true"]
    assert linked[8] in ("true", "false") and re.fullmatch(r"-1|\d+", linked[9]), linked
    assert linked[11:] == local[11:]  # the mirror's own log, as the local replica's

    header, row = ok(
        typed(
            f"kafka-replica-status --topics {DEMO} --include-mirror "
            "--bootstrap-server localhost:9093"
        )
    )
    assert header.split() == COLUMNS + MIRROR_COLUMNS
    cells = row.split()
    # The engine, warm, may have copied the three records already: the mirror's log ends at
    # 0 or 3.
    assert " ".join(cells[:11]) == f"{DEMO} 0 1 true false true true true 0 0 0"
    assert cells[11] in ("0", "3"), cells
    assert cells[12].isdigit()
    # The engine's last fetch and the lag: "-1" both until it has reported, then a time and
    # the records not copied yet.
    assert cells[13] == "ACTIVE" and len(cells) == 16, cells
    assert cells[14:] == ["-1", "-1"] or (cells[14].isdigit() and cells[15] in ("0", "3")), cells
    # Each value starts under its header, as Kafka's tool prints them.
    assert [m.start() for m in re.finditer(r"\S+", row)] == [
        m.start() for m in re.finditer(r"\S+", header)
    ]

    topic_line, partition_line = ok(
        typed(f"kafka-mirrors --describe --topics {DEMO} --bootstrap-server localhost:9093")
    )
    mirror = MirrorTopic.objects.get(mirror_topic=DEMO)
    # Topic ids as Kafka's own tool prints the source topic's
    [source_described] = [
        line
        for line in ok(
            run_tool(
                "kafka-topics",
                "--describe",
                "--topic",
                DEMO,
                "--bootstrap-server",
                "localhost:9092",
            )
        )
        if "TopicId:" in line
    ]
    assert f"TopicId: {mirror.source_topic_id}\t" in source_described, source_described
    assert re.fullmatch(
        rf"Topic: {DEMO}  LinkName: demo-link  LinkId: {link.link_id}  SourceTopic: {DEMO}  "
        rf"State: ACTIVE  SourceTopicId: {re.escape(mirror.source_topic_id)}  "
        r"StoppedSequenceNumber: 0  StateTime: \d{4}-\d\d-\d\d \d\d:\d\d:\d\d",
        topic_line,
    )
    # The link's stream (started by the test worker's beat) may have copied some already.
    line = re.fullmatch(
        r"    Partition: 0  State: ACTIVE  DestLogEndOffset: (\d)  "
        r"LastFetchSourceHighWatermark: (-1|3)  Lag: (\d)  TimeSinceLastFetchMs: (-1|\d+)  "
        r"OffsetMode: IDENTICAL  LagMs: (-1|\d+)",
        partition_line,
    )
    assert line and int(line[1]) + int(line[3]) == 3, partition_line

    assert ok(typed("kafka-mirrors --list --bootstrap-server localhost:9093")) == [DEMO]
    # Without --cluster-link, kafka-configs is Apache Kafka's own tool.
    topic = ok(typed(f"kafka-configs --bootstrap-server localhost:9092 --describe --topic {DEMO}"))
    assert topic[0] == f"Dynamic configs for topic {DEMO} are:"
