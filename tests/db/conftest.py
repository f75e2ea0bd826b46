"""What the database tests share. Nothing here reaches a Kafka cluster: the clusters they link
are in memory (tests/memory_kafka.py), answering the console's admin calls where the devstack's
clusters would be (their bootstrap addresses), beside a real Redis and real schema registries,
which start in a second."""

from __future__ import annotations

import re
import shlex
import subprocess
import threading
import time
import uuid

import pytest
from django.test import override_settings

from devstack import kafka, registry
from replication.core.redis_channel import client
from replication.kafka import translations
from replication.models import ClusterLink, KafkaCluster, MergeFlow, MirrorTopic
from tests import memory_kafka
from tests.shared_stack import shared_stack

LIGHT_PARTS = ["redis", "source-registry", "destination-registry"]


@pytest.fixture(scope="session")
def light_stack(stack):
    """Redis and the two schema registries (not the clusters)."""
    with shared_stack(stack, LIGHT_PARTS):
        yield stack


@pytest.fixture
def memory_clusters(light_stack):
    """The source and destination clusters, in memory, by name."""
    clusters = {node.name: memory_kafka.add_cluster(node.bootstrap) for node in kafka.NODES}
    with override_settings(
        ISTHMUS_KAFKA_ADMIN="tests.memory_kafka.MemoryAdmin",
        ISTHMUS_TRANSLATION_READER="tests.memory_kafka.MemoryTranslationReader",
        ISTHMUS_KAFKA_RECORDS="tests.memory_kafka.MemoryRecords",
    ):
        yield clusters
    translations.close_readers()
    memory_kafka.clear()


@pytest.fixture
def zone_keeper(light_stack):
    """Serve a network zone's calls (`zone_service.serve`, as `manage.py engine` does on a
    host of that zone) in a thread of the test's process, on the tests' Redis; stopped at the
    end. Takes the zone's name. Its threads read the database on connections of their own, so a
    test using it commits what it makes (`transactional_db`)."""
    from replication.kafka import zone_calls, zone_service

    started: list[tuple[threading.Event, threading.Thread]] = []

    def start(zone: str) -> None:
        stopping = threading.Event()
        thread = threading.Thread(target=zone_service.serve, args=(zone, stopping))
        thread.start()
        started.append((stopping, thread))
        deadline = time.monotonic() + 5
        while not client().exists(zone_calls.keeper_key(zone)):
            assert time.monotonic() < deadline, f"zone {zone}'s keeper did not start"
            time.sleep(0.02)

    yield start
    for stopping, thread in started:
        stopping.set()
        thread.join(10)


@pytest.fixture
def registered_clusters(db, memory_clusters):
    """The in-memory clusters registered as `make demo` registers the devstack's, each with
    its schema registry."""
    from replication.governance import audit
    from replication.kafka.clusters import register_cluster
    from replication.schemas.schema_registries import RegistryAccess

    return {
        node.name: register_cluster(
            audit.Actor.system("tests"),
            node.name,
            node.bootstrap,
            {},
            None,
            RegistryAccess(registry.of(node.name).url),
        )
        for node in kafka.NODES
    }


@pytest.fixture
def make_topic(memory_clusters):
    def make(node: kafka.KafkaNode, name: str, partitions: int = 1, **config: str) -> str:
        cluster = memory_clusters[node.name]
        admin = memory_kafka.MemoryAdmin({"bootstrap.servers": cluster.bootstrap})
        admin.create_topic(name, partitions, None, config)
        return name

    return make


@pytest.fixture
def make_link(registered_clusters):
    """Links from the source (over PLAINTEXT, as in the tutorial) into the destination."""
    from replication.governance import audit
    from replication.topics.link_creation import create_link

    def make(configs: dict[str, str] | None = None, name: str | None = None) -> ClusterLink:
        return create_link(
            audit.Actor.system("tests"),
            registered_clusters["destination"],
            name or f"link-{uuid.uuid4().hex[:8]}",
            {"bootstrap.servers": kafka.SOURCE.bootstrap, **(configs or {})},
        )

    return make


@pytest.fixture
def memory_mirror(bidirectional, make_topic, topic_name, memory_clusters):
    """A mirror of a new source topic over a new bidirectional link: (the link's half into the
    destination, the mirror). Each partition holds `records` on both clusters: no engine copies
    here, so the destination's own records stand for the copy."""

    def make(
        records: int = 0,
        partitions: int = 1,
        topic_configs: dict[str, str] | None = None,
        **link_configs: str,
    ) -> tuple[ClusterLink, MirrorTopic]:
        from replication.governance import audit
        from replication.topics.mirrors import create_mirror

        make_topic(kafka.SOURCE, topic_name, partitions, **(topic_configs or {}))
        link = bidirectional(**link_configs)
        mirror = create_mirror(audit.Actor.system("tests"), link, topic_name)
        for cluster in (memory_clusters["source"], memory_clusters["destination"]):
            for p in range(partitions):
                cluster.produce(topic_name, p, records)
        return link, mirror

    return make


@pytest.fixture
def topic_name(request) -> str:
    return re.sub(r"[^a-zA-Z0-9-]", "-", request.node.name)[:60] + "-" + uuid.uuid4().hex[:6]


@pytest.fixture
def make_flow():
    """A merge flow over a link "from-dc1" into cluster "dc2"."""

    def make(source: str, destination: str, mapping: str) -> MergeFlow:
        cluster = KafkaCluster.objects.create(name="dc2", bootstrap_servers="127.0.0.1:1")
        link = ClusterLink.objects.create(
            name="from-dc1", destination=cluster, source_cluster_id="x"
        )
        return MergeFlow.objects.create(
            name=f"from-dc1.{source}",
            link=link,
            destination=cluster,
            source_topic=source,
            destination_topic=destination,
            mapping=mapping,
        )

    return make


@pytest.fixture
def gateway_files(tmp_path):
    """A gateway's lock, config, pid and log files in the test's folder, not var/."""
    with override_settings(VAR_DIR=tmp_path):
        yield


@pytest.fixture
def gateway(registered_clusters, gateway_files):
    """A gateway that may route to both clusters, routing to the source (no proxy started)."""
    from replication.models import Gateway

    made = Gateway.objects.create(
        name="orders", host="127.0.0.1", port=29400, route=registered_clusters["source"]
    )
    made.clusters.set([registered_clusters["source"], registered_clusters["destination"]])
    return made


@pytest.fixture(scope="session")
def devstack():
    """A database test never starts the clusters: one that needs them is an integration test."""
    pytest.fail("This test needs the real clusters: it belongs in tests/integration.")


@pytest.fixture
def typed(live_server, registered_clusters, tokens, monkeypatch):
    """Run a command line as typed in a shell, with a role's token, in this process
    (tests/cli_in_process.py): its Kafka client answered by the in-memory clusters, the
    tutorial's localhost:9092 and localhost:9093 among them."""
    from tests import cli_in_process

    def run(line: str, role: str = "operator", **env: str) -> subprocess.CompletedProcess:
        environment = {
            "ISTHMUS_URL": live_server.url,
            "ISTHMUS_TOKEN": tokens[role],
            "ISTHMUS_CONFIG": "/nonexistent",
            **env,
        }
        with monkeypatch.context() as scoped:
            for name, value in environment.items():
                scoped.setenv(name, value)
            return cli_in_process.run(shlex.split(line), scoped)

    return run
