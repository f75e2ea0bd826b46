"""A cluster in another network zone is reached by the console only through the keeper of that
zone's engine (issue 47): each call is carried through Redis, made by the keeper, and answered
with its value or its error. Here the source sits behind a firewall: the in-memory source
answers only the keeper's threads (`zone_keeper`, as `manage.py engine` serves on a host of
its zone), and refuses the console's as a closed port does, yet a source-initiated link is
made, a mirror created and shown, its configs synced. The same on real brokers, the source in
a network namespace of its own: tests/integration/test_engine_placement.py."""

from __future__ import annotations

import threading
import time

import pytest
from django.urls import reverse
from django.utils import timezone

from devstack import kafka
from infra.kafka_errors import KafkaAdminError, TopicNotFound, Unreachable
from replication.core.errors import ReplicationError
from replication.core.redis_channel import client
from replication.governance import audit
from replication.kafka import zone_calls
from replication.kafka.connections import cluster_admin, destination_admin, source_admin
from replication.kafka.zone_calls import Target, ZoneAdmin, ZoneRecords
from replication.models import ClusterLink, KafkaCluster
from replication.sync import syncers
from replication.topics.link_creation import create_link
from replication.topics.mirrors import create_mirror
from tests import memory_kafka

ACTOR = audit.Actor.system("tests")


@pytest.fixture
def firewall(monkeypatch):
    """Put the source behind a firewall: from then on it answers only the keeper's threads, and
    any other sees a closed port. Gives the threads that reached it, by name."""
    reached: set[str] = set()
    real = memory_kafka.MemoryAdmin.reached

    def reached_from_here(self, doing):
        name = threading.current_thread().name
        if self.bootstrap == kafka.SOURCE.bootstrap:
            if not name.startswith("zone-call"):
                raise Unreachable(f"Could not {doing} at {self.bootstrap}: connection refused.")
            reached.add(name)
        return real(self, doing)

    def close() -> set[str]:
        monkeypatch.setattr(memory_kafka.MemoryAdmin, "reached", reached_from_here)
        return reached

    return close


@pytest.fixture
def in_dc(transactional_db, registered_clusters, zone_keeper):
    """The source registered in network zone "dc", its keeper serving; (source, destination)."""
    source = registered_clusters["source"]
    KafkaCluster.objects.filter(pk=source.pk).update(engine="dc")
    source.refresh_from_db()
    zone_keeper("dc")
    return source, registered_clusters["destination"]


def test_a_source_initiated_link_works_from_a_console_that_cannot_reach_its_source(
    in_dc, firewall, make_topic, topic_name, api, client_as
):
    source, destination = in_dc
    make_topic(kafka.SOURCE, topic_name, 3, **{"retention.ms": "3600000"})
    reached = firewall()
    with pytest.raises(Unreachable, match="connection refused"):
        memory_kafka.MemoryAdmin({"bootstrap.servers": source.bootstrap_servers}).describe_cluster()
    operator = api("operator")

    inbound = operator.post(
        f"/kafka/v3/clusters/{destination.cluster_id}/links?link_name=hybrid",
        {
            "configs": [{"name": "connection.mode", "value": "INBOUND"}],
            "source_cluster_id": source.cluster_id,
        },
        content_type="application/json",
    )
    assert inbound.status_code == 204, inbound.content
    link = ClusterLink.objects.get(name="hybrid")
    mirror = create_mirror(ACTOR, link, topic_name)

    # Made as the source is: its partitions and its configs, read in the zone.
    assert mirror.num_partitions == 3
    assert destination_admin(link).topic_configs(topic_name)["retention.ms"].value == "3600000"
    memory_kafka.cluster(source.bootstrap_servers).topics[topic_name].configs["retention.ms"] = (
        "60000"
    )
    syncers.refresh_metadata(link, timezone.now())
    syncers.sync_topic_configs(link, timezone.now())
    assert destination_admin(link).topic_configs(topic_name)["retention.ms"].value == "60000"
    viewer = client_as("viewer")
    page = viewer.get(reverse("mirror-detail", args=[destination.name, topic_name]))
    assert page.status_code == 200
    topics = viewer.get(reverse("cluster-detail", args=[source.name])).content.decode()
    assert topic_name in topics
    assert reached  # every read of the source was the keeper's


def test_a_call_answers_with_the_calls_own_value_or_its_own_error(in_dc, make_topic, topic_name):
    source, destination = in_dc
    make_topic(kafka.SOURCE, topic_name, 2)
    relayed = cluster_admin(source)
    direct = memory_kafka.MemoryAdmin({"bootstrap.servers": source.bootstrap_servers})

    assert isinstance(relayed, ZoneAdmin)
    assert relayed.describe_topic(topic_name) == direct.describe_topic(topic_name)
    assert relayed.offsets([(topic_name, 0), (topic_name, 1)]) == {
        (topic_name, 0): 0,
        (topic_name, 1): 0,
    }
    with pytest.raises(TopicNotFound):
        relayed.describe_topic("no-such-topic")
    # The console's own zone is reached directly.
    assert not isinstance(cluster_admin(destination), ZoneAdmin)


def test_without_its_keeper_a_zones_cluster_does_not_answer_and_nothing_is_made(
    transactional_db, registered_clusters, make_topic, topic_name, client_as
):
    source, destination = registered_clusters["source"], registered_clusters["destination"]
    KafkaCluster.objects.filter(pk=source.pk).update(engine="dc")
    make_topic(kafka.SOURCE, topic_name)

    with pytest.raises(ReplicationError) as refused:
        create_link(
            ACTOR,
            destination,
            "hybrid",
            {"connection.mode": "INBOUND"},
            source_cluster_id=source.cluster_id,
        )

    assert "No keeper of network zone dc is serving: start `manage.py engine` with " in str(
        refused.value
    )
    assert "ISTHMUS_ENGINE_NAME=dc on a host of that zone" in str(refused.value)
    assert not ClusterLink.objects.exists()
    page = client_as("viewer").get(reverse("data-plane")).content.decode()
    assert '<dd id="keeper-dc" data-serving="false" class="error">not serving' in page


def test_a_keeper_makes_no_call_past_its_deadline_nor_one_not_sealed_with_the_key(
    in_dc, make_topic, topic_name, caplog
):
    source, _ = in_dc
    make_topic(kafka.SOURCE, topic_name)
    r = client()
    late = {
        "target": Target("dc", cluster=source.pk).as_dict(),
        "kind": "admin",
        "method": "delete_topic",
        "args": [topic_name],
        "kwargs": {"dict": []},
        "answer": "isthmus:zone-answer:late",
        "deadline": time.time() - 1,
    }
    r.rpush(zone_calls.calls_key("dc"), zone_calls.seal(late))
    r.rpush(zone_calls.calls_key("dc"), b"not sealed: delete every topic")

    deadline = time.monotonic() + 5
    while r.llen(zone_calls.calls_key("dc")) and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)

    assert topic_name in memory_kafka.cluster(source.bootstrap_servers).topics
    assert not r.exists("isthmus:zone-answer:late")
    assert "not sealed with this deployment's key was dropped" in caplog.text


def test_a_keeper_reaches_only_its_own_zones_clusters_and_links(in_dc, make_link):
    _, destination = in_dc
    elsewhere = make_link()  # copied by the console's own engine

    with pytest.raises(Exception, match="not registered in network zone dc"):
        ZoneAdmin(Target("dc", cluster=destination.pk)).describe_cluster()
    with pytest.raises(Exception, match="not copied by network zone dc's engine"):
        ZoneAdmin(Target("dc", source_of=elsewhere.pk)).describe_cluster()
    assert not isinstance(source_admin(elsewhere), ZoneAdmin)


def test_an_answer_that_cannot_be_carried_says_where_to_look_not_pythons_words(
    in_dc, make_topic, topic_name, memory_clusters
):
    source, _ = in_dc
    make_topic(kafka.SOURCE, topic_name)
    memory_clusters["source"].produce(topic_name, 0, 1)
    held = ZoneRecords(Target("dc", cluster=source.pk))

    with pytest.raises(KafkaAdminError) as failed:
        held.read_head(topic_name, 1, 10)  # Kafka client messages: no value to carry

    assert str(failed.value) == (
        "The keeper of network zone dc could not make the call read_head: its log "
        "(manage.py engine, on a host of the zone) says why."
    )
