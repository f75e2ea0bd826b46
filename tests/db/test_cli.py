"""The Confluent-compatible command-line tools, typed as the seed tutorial writes them, against
a live console, on in-memory clusters: what they print, validate, pause, alter, ask approval
for and refuse. Run in the test's process (tests/cli_in_process.py); the tutorial's commands as
processes of their own, against the real clusters with Kafka's own tools as the judge, are
tests/integration/test_cli.py."""

from __future__ import annotations

import subprocess

import pytest

from devstack import kafka
from replication.cutover import promote, stop_batches
from replication.governance import audit
from replication.models import ClusterLink, MirrorTopic
from replication.topics.links import peer_of

# The tutorial's addresses, localhost:9092 and localhost:9093 (shifted with the stack's ports)
SOURCE = kafka.SOURCE.bootstrap.replace("127.0.0.1", "localhost")
DESTINATION = kafka.DESTINATION.bootstrap.replace("127.0.0.1", "localhost")
CREATE_LINK = (
    f"kafka-cluster-links --bootstrap-server {DESTINATION} --create --link demo-link "
    f"--config bootstrap.servers={SOURCE}"
)
CREATE_MIRROR = "kafka-mirrors --create --mirror-topic demo --link demo-link"


@pytest.fixture
def demo(make_topic) -> str:
    """The tutorial's topic `demo`, on the source."""
    return make_topic(kafka.SOURCE, "demo")


def ok(result: subprocess.CompletedProcess) -> list[str]:
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def refused(result: subprocess.CompletedProcess, *fragments: str) -> None:
    assert result.returncode != 0
    assert result.stdout == ""
    assert "Traceback" not in result.stderr, result.stderr  # the error itself, in words
    for fragment in fragments:
        assert fragment in result.stderr


def test_a_mirror_creation_can_be_validated_without_creating_it(typed, demo, memory_clusters):
    ok(typed(CREATE_LINK))
    assert ok(typed(f"{CREATE_MIRROR} --validate-only --bootstrap-server {DESTINATION}")) == [
        "Creation of mirror topic demo successfully validated."
    ]
    assert not MirrorTopic.objects.exists()
    assert "demo" not in memory_clusters["destination"].topics


def test_mirrors_are_paused_and_unpaused_by_topic_name(typed, demo):
    ok(typed(CREATE_LINK))
    ok(typed(f"{CREATE_MIRROR} --bootstrap-server {DESTINATION}"))

    pause = f"kafka-mirrors --pause --topics demo --bootstrap-server {DESTINATION}"
    assert ok(typed(pause)) == [
        "Request for pausing topic demo's mirror was successfully scheduled."
    ]
    assert MirrorTopic.objects.get(mirror_topic="demo").state == "PAUSED"
    again = typed(pause)
    assert again.returncode == 1 and "already paused" in again.stderr
    describe = ok(
        typed(f"kafka-mirrors --describe --links demo-link --bootstrap-server {DESTINATION}")
    )
    assert "State: PAUSED" in describe[0] and "State: PAUSED" in describe[1]

    unpause = f"kafka-mirrors --unpause --topics demo --bootstrap-server {DESTINATION}"
    ok(typed(f"{unpause} --validate-only"))
    assert MirrorTopic.objects.get(mirror_topic="demo").state == "PAUSED"
    assert ok(typed(unpause)) == [
        "Request for resuming topic demo's mirror was successfully scheduled."
    ]
    assert MirrorTopic.objects.get(mirror_topic="demo").state == "ACTIVE"
    refused(
        typed(f"kafka-mirrors --pause --topics nothing-here --bootstrap-server {DESTINATION}"),
        "nothing-here is not a mirror topic",
    )


def test_link_configs_are_described_and_altered_with_kafka_configs(typed, demo):
    ok(typed(CREATE_LINK))
    alter = f"kafka-configs --bootstrap-server {DESTINATION} --alter --cluster-link demo-link"

    assert ok(
        typed(f"{alter} --add-config cluster.link.retry.timeout.ms=10000,metadata.max.age.ms=5000")
    ) == ["Completed updating config for cluster-link demo-link."]
    assert ok(
        typed(f"kafka-configs --bootstrap-server {DESTINATION} --describe --cluster-link demo-link")
    ) == [
        "Dynamic configs for cluster-link demo-link are:",
        f"  bootstrap.servers={SOURCE} sensitive=false synonyms={{}}",
        "  metadata.max.age.ms=5000 sensitive=false synonyms={}",
        "  cluster.link.retry.timeout.ms=10000 sensitive=false synonyms={}",
    ]
    ok(typed(f"{alter} --delete-config metadata.max.age.ms"))
    assert ClusterLink.objects.get(name="demo-link").configs == {
        "bootstrap.servers": SOURCE,
        "cluster.link.retry.timeout.ms": "10000",
    }
    refused(
        typed(f"{alter} --add-config no.such=1"),
        "Unknown link config 'no.such'",
        "metadata.max.age.ms",
    )


def test_roles_decide_what_the_tools_may_do(typed, demo):
    refused(typed(CREATE_LINK, role="viewer"), "Your role does not allow link.manage")
    assert not ClusterLink.objects.exists()
    ok(typed(CREATE_LINK))
    ok(typed(f"{CREATE_MIRROR} --bootstrap-server {DESTINATION}"))
    refused(
        typed(f"kafka-mirrors --pause --topics demo --bootstrap-server {DESTINATION}", "viewer"),
        "Your role does not allow mirror.manage",
    )
    delete = f"kafka-cluster-links --bootstrap-server {DESTINATION} --delete --link demo-link"
    refused(typed(delete, role="viewer"), "link.delete")
    refused(typed(delete + " --force", role="operator"), "Give a reason")
    asked = ok(typed(delete + " --force --reason retire", role="operator"))
    assert "needs 1 approval(s): request" in asked[0]
    assert asked[2].startswith("An approver runs it with: kafka-mirrors --approve ")
    refused(typed(delete, role="admin"), "still has mirror topics: demo", "force")
    assert ok(typed(delete + " --force --validate-only", role="admin")) == [
        "Cluster link 'demo-link' deletion successfully validated."
    ]
    assert ok(typed(delete + " --force", role="admin")) == [
        "Cluster link 'demo-link' deletion successfully completed."
    ]
    assert not ClusterLink.objects.exists()


def test_mistakes_get_clear_errors_on_stderr(typed, demo, tmp_path):
    create = CREATE_LINK
    refused(typed(create, ISTHMUS_TOKEN="isthmus_wrong"), "not valid")
    refused(typed(create, ISTHMUS_TOKEN="", ISTHMUS_URL=""), "No Isthmus console URL given")
    refused(typed(create, ISTHMUS_URL="http://127.0.0.1:9"), "Cannot reach the Isthmus console")
    refused(
        typed(create.replace(DESTINATION, "localhost:1")),
        "Cannot reach the cluster at --bootstrap-server localhost:1",
    )
    refused(typed(create.replace(SOURCE, "localhost:1")), "cannot reach its source")
    refused(typed(create + ",linger=5"), "Unknown link config 'linger'")
    refused(
        typed(f"kafka-cluster-links --bootstrap-server {DESTINATION} --create --link x"),
        "--config or --config-file",
    )
    refused(typed(f"kafka-cluster-links --bootstrap-server {DESTINATION} --delete"), "needs --link")
    refused(
        typed(
            "kafka-mirrors --create --mirror-topic demo --link nope "
            f"--bootstrap-server {DESTINATION}"
        ),
        "No cluster link named 'nope'",
    )
    refused(
        typed(create.replace("--link demo-link", "--link 'x?force=true&'")), "Invalid link name"
    )
    refused(
        typed(f"kafka-mirrors --failover --topics demo --bootstrap-server {DESTINATION}"),
        "Topic demo is not a mirror topic of any cluster link",
    )
    refused(
        typed(f"kafka-configs --bootstrap-server {DESTINATION} --describe --cluster-link a/b"),
        "'a/b' is not a valid name",
    )
    binary = tmp_path / "link.properties"
    binary.write_bytes(b"\xff\xfe\x00bootstrap")
    refused(
        typed(
            f"kafka-cluster-links --bootstrap-server {DESTINATION} --create --link x "
            f"--config-file {binary}"
        ),
        "is not a text file",
    )
    assert not ClusterLink.objects.exists()


def test_the_console_and_token_can_come_from_a_command_config_file(
    typed, demo, tokens, live_server, tmp_path
):
    config = tmp_path / "admin.properties"
    config.write_text(f"isthmus.url={live_server.url}\nisthmus.token={tokens['admin']}\n")
    ok(typed(f"{CREATE_LINK} --command-config {config}", ISTHMUS_URL="", ISTHMUS_TOKEN=""))
    assert ClusterLink.objects.get(name="demo-link")


def test_the_tutorial_promote_prints_its_lines_and_an_operator_gets_a_request_to_approve(
    typed, demo
):
    ok(typed(CREATE_LINK))
    ok(typed(f"{CREATE_MIRROR} --bootstrap-server {DESTINATION}"))
    stop = f"kafka-mirrors --promote --topics demo --bootstrap-server {DESTINATION}"
    ClusterLink.objects.update(approvals_required=2)  # one approval leaves it waiting

    asked = ok(typed(stop + " --reason cut-over", role="operator"))
    assert asked[:2] == [
        "Calculating max offset and ms lag for mirror topics: [demo]",
        "Finished calculating max offset lag and max lag ms for mirror topics: [demo]",
    ]
    assert asked[2].startswith("Promoting demo needs 2 approval(s): request ")
    request_id = asked[2].split("request ")[1].split()[0]
    approve = f"kafka-mirrors --approve {request_id} --bootstrap-server {DESTINATION}"
    refused(typed(approve))
    approved = ok(typed(approve, role="approver"))
    assert f"Request: {request_id}  Action: promote" in approved[0]
    assert "State: PENDING" in approved[0] and "Approvals: 1/2" in approved[0]

    # The demo's tools act as the admin, who acts at once: the tutorial's lines, as typed.
    ClusterLink.objects.get().approval_requests.update(state="WITHDRAWN")
    assert ok(typed(stop, role="admin")) == [
        "Calculating max offset and ms lag for mirror topics: [demo]",
        "Finished calculating max offset lag and max lag ms for mirror topics: [demo]",
        "Request for stopping topic demo's mirror was successfully scheduled.",
        "Please use the describe command with the --pending-stopped-only option to monitor "
        "progress.",
    ]
    stop_batches.finish_pending_stops(ClusterLink.objects.get())  # the worker's part
    [line] = ok(
        typed(
            "kafka-mirrors --describe --topics demo --pending-stopped-only "
            f"--bootstrap-server {DESTINATION}"
        )
    )
    assert line.startswith("Topic: demo  LinkName: demo-link  LinkId: ")
    assert "State: STOPPED" in line
    again = typed(stop, role="admin")
    assert "Topic 'demo' has already stopped its mirror from 'demo-link'" in again.stderr


def test_a_truncate_and_restore_dry_run_prints_per_partition_what_is_set_aside_and_copied(
    typed, memory_mirror, topic_name, memory_clusters
):
    actor = audit.Actor.system("tests")
    link, _ = memory_mirror(records=3, partitions=2)
    [done] = promote.stop_mirrors(actor, link, [topic_name], promote.FAILOVER, wait=True)
    assert done.error == "", done.error
    memory_clusters["source"].produce(topic_name, 0, 2)  # taken by the old primary after all
    memory_clusters["destination"].produce(topic_name, 1, 3)  # by the promoted topic

    lines = ok(
        typed(
            f"kafka-mirrors --truncate-and-restore --topics {topic_name} --link {link.name} "
            f"--validate-only --reason 'the source is back' --bootstrap-server {SOURCE}"
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
    assert not peer_of(link).mirrors.exists()  # a dry run
