"""The Confluent-compatible command-line tools, typed as the seed tutorial writes them, against
a live console and the real clusters."""

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
from replication.governance import audit
from replication.models import ClusterLink, MirrorTopic
from tests import leftovers
from tests.conftest import admin_config
from tests.kafka_clients import READ_ONLY_ACLS, acls_on, produce, run_tool
from tests.mirror_checks import eventually

pytestmark = pytest.mark.integration

# The tutorial's topic `demo`, made this session's own (see `demo_topic`).
DEMO = leftovers.unique_name("demo")
CREATE_LINK = (
    "kafka-cluster-links --bootstrap-server localhost:9093 --create --link demo-link "
    "--config bootstrap.servers=localhost:9092"
)


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


def refused(result: subprocess.CompletedProcess, *fragments: str) -> None:
    assert result.returncode != 0
    assert result.stdout == ""
    # the error itself, not a client library's log or a traceback
    assert "Traceback" not in result.stderr, result.stderr
    assert not any(line.startswith("%") for line in result.stderr.splitlines()), result.stderr
    for fragment in fragments:
        assert fragment in result.stderr


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


def test_a_mirror_creation_can_be_validated_without_creating_it(typed, demo_topic):
    ok(typed(CREATE_LINK))
    assert ok(
        typed(
            f"kafka-mirrors --create --mirror-topic {DEMO} --link demo-link --validate-only "
            "--bootstrap-server localhost:9093"
        )
    ) == [f"Creation of mirror topic {DEMO} successfully validated."]
    assert not MirrorTopic.objects.exists()
    destination = AdminClient(admin_config(kafka.DESTINATION))
    assert DEMO not in destination.list_topics(timeout=10).topics


def test_mirrors_are_paused_and_unpaused_by_topic_name(typed, demo_topic):
    ok(typed(CREATE_LINK))
    ok(
        typed(
            f"kafka-mirrors --create --mirror-topic {DEMO} --link demo-link "
            "--bootstrap-server localhost:9093"
        )
    )

    assert ok(
        typed(f"kafka-mirrors --pause --topics {DEMO} --bootstrap-server localhost:9093")
    ) == [f"Request for pausing topic {DEMO}'s mirror was successfully scheduled."]
    assert MirrorTopic.objects.get(mirror_topic=DEMO).state == "PAUSED"
    again = typed(f"kafka-mirrors --pause --topics {DEMO} --bootstrap-server localhost:9093")
    assert again.returncode == 1 and "already paused" in again.stderr
    describe = ok(
        typed("kafka-mirrors --describe --links demo-link --bootstrap-server localhost:9093")
    )
    assert "State: PAUSED" in describe[0] and "State: PAUSED" in describe[1]

    ok(
        typed(
            f"kafka-mirrors --unpause --topics {DEMO} --validate-only "
            "--bootstrap-server localhost:9093"
        )
    )
    assert MirrorTopic.objects.get(mirror_topic=DEMO).state == "PAUSED"
    assert ok(
        typed(f"kafka-mirrors --unpause --topics {DEMO} --bootstrap-server localhost:9093")
    ) == [f"Request for resuming topic {DEMO}'s mirror was successfully scheduled."]
    assert MirrorTopic.objects.get(mirror_topic=DEMO).state == "ACTIVE"
    refused(
        typed("kafka-mirrors --pause --topics nothing-here --bootstrap-server localhost:9093"),
        "nothing-here is not a mirror topic",
    )


def test_link_configs_are_described_and_altered_with_kafka_configs(typed, demo_topic):
    ok(typed(CREATE_LINK))

    assert ok(
        typed(
            "kafka-configs --bootstrap-server localhost:9093 --alter --cluster-link demo-link "
            "--add-config cluster.link.retry.timeout.ms=10000,metadata.max.age.ms=5000"
        )
    ) == ["Completed updating config for cluster-link demo-link."]
    assert ok(
        typed("kafka-configs --bootstrap-server localhost:9093 --describe --cluster-link demo-link")
    ) == [
        "Dynamic configs for cluster-link demo-link are:",
        "  bootstrap.servers=localhost:9092 sensitive=false synonyms={}",
        "  metadata.max.age.ms=5000 sensitive=false synonyms={}",
        "  cluster.link.retry.timeout.ms=10000 sensitive=false synonyms={}",
    ]
    ok(
        typed(
            "kafka-configs --bootstrap-server localhost:9093 --alter --cluster-link demo-link "
            "--delete-config metadata.max.age.ms"
        )
    )
    assert ClusterLink.objects.get(name="demo-link").configs == {
        "bootstrap.servers": "localhost:9092",
        "cluster.link.retry.timeout.ms": "10000",
    }
    refused(
        typed(
            "kafka-configs --bootstrap-server localhost:9093 --alter --cluster-link demo-link "
            "--add-config no.such=1"
        ),
        "Unknown link config 'no.such'",
        "metadata.max.age.ms",
    )
    # Without --cluster-link it is Apache Kafka's own tool.
    topic = ok(typed(f"kafka-configs --bootstrap-server localhost:9092 --describe --topic {DEMO}"))
    assert topic[0] == f"Dynamic configs for topic {DEMO} are:"


def test_roles_decide_what_the_tools_may_do(typed, demo_topic):
    create = CREATE_LINK
    refused(typed(create, role="viewer"), "Your role does not allow link.manage")
    assert not ClusterLink.objects.exists()
    ok(typed(create))
    ok(
        typed(
            f"kafka-mirrors --create --mirror-topic {DEMO} --link demo-link "
            "--bootstrap-server localhost:9093"
        )
    )
    refused(
        typed(
            f"kafka-mirrors --pause --topics {DEMO} --bootstrap-server localhost:9093",
            role="viewer",
        ),
        "Your role does not allow mirror.manage",
    )
    delete = "kafka-cluster-links --bootstrap-server localhost:9093 --delete --link demo-link"
    refused(typed(delete, role="viewer"), "link.delete")
    refused(typed(delete + " --force", role="operator"), "Give a reason")
    asked = ok(typed(delete + " --force --reason retire", role="operator"))
    assert "needs 1 approval(s): request" in asked[0]
    assert asked[2].startswith("An approver runs it with: kafka-mirrors --approve ")
    refused(typed(delete, role="admin"), f"still has mirror topics: {DEMO}", "force")
    assert ok(typed(delete + " --force --validate-only", role="admin")) == [
        "Cluster link 'demo-link' deletion successfully validated."
    ]
    assert ok(typed(delete + " --force", role="admin")) == [
        "Cluster link 'demo-link' deletion successfully completed."
    ]
    assert not ClusterLink.objects.exists()


def test_mistakes_get_clear_errors_on_stderr(typed, demo_topic, tmp_path):
    create = CREATE_LINK
    refused(typed(create, ISTHMUS_TOKEN="isthmus_wrong"), "not valid")
    refused(typed(create, ISTHMUS_TOKEN="", ISTHMUS_URL=""), "No Isthmus console URL given")
    refused(typed(create, ISTHMUS_URL="http://127.0.0.1:9"), "Cannot reach the Isthmus console")
    refused(
        typed(create.replace("localhost:9093", "localhost:1")),
        "Cannot reach the cluster at --bootstrap-server localhost:1",
    )
    refused(typed(create.replace("localhost:9092", "localhost:1")), "cannot reach its source")
    refused(typed(create + ",linger=5"), "Unknown link config 'linger'")
    refused(
        typed("kafka-cluster-links --bootstrap-server localhost:9093 --create --link x"),
        "--config or --config-file",
    )
    refused(typed("kafka-cluster-links --bootstrap-server localhost:9093 --delete"), "needs --link")
    refused(
        typed(
            f"kafka-mirrors --create --mirror-topic {DEMO} --link nope "
            "--bootstrap-server localhost:9093"
        ),
        "No cluster link named 'nope'",
    )
    refused(
        typed(create.replace("--link demo-link", "--link 'x?force=true&'")), "Invalid link name"
    )
    refused(
        typed(f"kafka-mirrors --failover --topics {DEMO} --bootstrap-server localhost:9093"),
        f"Topic {DEMO} is not a mirror topic of any cluster link",
    )
    refused(
        typed("kafka-configs --bootstrap-server localhost:9093 --describe --cluster-link a/b"),
        "'a/b' is not a valid name",
    )
    binary = tmp_path / "link.properties"
    binary.write_bytes(b"\xff\xfe\x00bootstrap")
    refused(
        typed(
            "kafka-cluster-links --bootstrap-server localhost:9093 --create --link x "
            f"--config-file {binary}"
        ),
        "is not a text file",
    )
    assert not ClusterLink.objects.exists()


def test_the_console_and_token_can_come_from_a_command_config_file(
    typed, demo_topic, tokens, live_server, tmp_path
):
    config = tmp_path / "admin.properties"
    config.write_text(f"isthmus.url={live_server.url}\nisthmus.token={tokens['admin']}\n")
    ok(
        typed(
            "kafka-cluster-links --bootstrap-server localhost:9093 --create --link demo-link "
            f"--config bootstrap.servers=localhost:9092 --command-config {config}",
            ISTHMUS_URL="",
            ISTHMUS_TOKEN="",
        )
    )
    assert ClusterLink.objects.get(name="demo-link")


def test_the_tutorial_promote_prints_its_lines_and_an_operator_gets_a_request_to_approve(
    typed, demo_topic
):
    from replication.cutover import stop_batches

    ok(typed(CREATE_LINK))
    mirror = f"kafka-mirrors --create --mirror-topic {DEMO} --link demo-link"
    ok(typed(f"{mirror} --bootstrap-server localhost:9093"))
    stop = f"kafka-mirrors --promote --topics {DEMO} --bootstrap-server localhost:9093"
    ClusterLink.objects.update(approvals_required=2)  # one approval leaves it waiting

    asked = ok(typed(stop + " --reason cut-over", role="operator"))
    assert asked[:2] == [
        f"Calculating max offset and ms lag for mirror topics: [{DEMO}]",
        f"Finished calculating max offset lag and max lag ms for mirror topics: [{DEMO}]",
    ]
    assert asked[2].startswith(f"Promoting {DEMO} needs 2 approval(s): request ")
    request_id = asked[2].split("request ")[1].split()[0]
    refused(typed(f"kafka-mirrors --approve {request_id} --bootstrap-server localhost:9093"))
    approved = ok(
        typed(
            f"kafka-mirrors --approve {request_id} --bootstrap-server localhost:9093",
            role="approver",
        )
    )
    assert f"Request: {request_id}  Action: promote" in approved[0]
    assert "State: PENDING" in approved[0] and "Approvals: 1/2" in approved[0]

    # The demo's tools act as the admin, who acts at once: the tutorial's lines, as typed.
    ClusterLink.objects.get().approval_requests.update(state="WITHDRAWN")
    assert ok(typed(stop, role="admin")) == [
        f"Calculating max offset and ms lag for mirror topics: [{DEMO}]",
        f"Finished calculating max offset lag and max lag ms for mirror topics: [{DEMO}]",
        f"Request for stopping topic {DEMO}'s mirror was successfully scheduled.",
        "Please use the describe command with the --pending-stopped-only option to monitor "
        "progress.",
    ]
    describe = (
        f"kafka-mirrors --describe --topics {DEMO} --pending-stopped-only "
        "--bootstrap-server localhost:9093"
    )

    def stopped() -> str | None:
        # The worker's part, done here too: a test worker may or may not be running, and
        # with one, its beat may have started the link's stream, which must stop writing first.
        stop_batches.finish_pending_stops(ClusterLink.objects.get())
        [line] = ok(typed(describe))
        return line if "State: STOPPED" in line else None

    line = eventually(stopped, 120, "the promote finishing")
    assert line.startswith(f"Topic: {DEMO}  LinkName: demo-link  LinkId: ")
    again = typed(stop, role="admin")
    assert f"Topic '{DEMO}' has already stopped its mirror from 'demo-link'" in again.stderr


def test_a_truncate_and_restore_dry_run_prints_per_partition_what_is_set_aside_and_copied(
    typed, bidirectional, make_topic, topic_name
):
    from replication.cutover import promote
    from replication.topics.mirrors import create_mirror
    from tests.mirror_checks import run_until_copied

    actor = audit.Actor.system("tests")
    make_topic(kafka.SOURCE, topic_name, partitions=2)
    plain = {n: {"bootstrap.servers": n.bootstrap} for n in kafka.NODES}
    produce(
        plain[kafka.SOURCE], topic_name, [{"value": b"x", "partition": i % 2} for i in range(6)]
    )
    link = bidirectional()
    run_until_copied(link, [create_mirror(actor, link, topic_name)])
    promote.stop_mirrors(actor, link, [topic_name], promote.FAILOVER, wait=True)
    produce(plain[kafka.SOURCE], topic_name, [{"value": b"old", "partition": 0}] * 2)
    produce(plain[kafka.DESTINATION], topic_name, [{"value": b"new", "partition": 1}] * 3)

    lines = ok(
        typed(
            f"kafka-mirrors --truncate-and-restore --topics {topic_name} --link {link.name} "
            "--validate-only --reason 'the source is back' --bootstrap-server localhost:9092"
        )
    )

    assert (
        f"Topic {topic_name}: 2 messages would be truncated and kept in a quarantine topic."
        in lines
    )
    assert (
        "  Partition 0: truncated to offset 3, 2 set aside, 0 to copy from the promoted topic."
        in lines
    )
    assert (
        "  Partition 1: truncated to offset 3, 0 set aside, 3 to copy from the promoted topic."
        in lines
    )
    assert not MirrorTopic.objects.filter(destination__name="source").exists()  # a dry run
