"""Registering clusters, and the Clusters page, on in-memory clusters (real brokers, logins and the
Celery probe: tests/integration/test_cluster_registry.py)."""

import pytest
from django.urls import reverse

from devstack import kafka
from replication.core.errors import ReplicationError
from replication.governance import audit
from replication.kafka.clusters import register_cluster
from replication.models import AuditEvent, KafkaCluster
from replication.topics.mirrors import create_mirror
from tests.conftest import admin_config


def test_the_status_table_refreshes_as_an_htmx_partial(registered_clusters, client_as):
    response = client_as("viewer").get(reverse("clusters"), HTTP_HX_REQUEST="true")
    page = response.content.decode()
    assert page.lstrip().startswith('<div id="cluster-status"')
    assert "<html" not in page
    assert registered_clusters["source"].cluster_id in page


def test_registering_an_unreachable_cluster_is_refused_and_saves_nothing(db):
    with pytest.raises(ReplicationError) as refused:
        register_cluster(audit.Actor.system("tests"), "nowhere", "127.0.0.1:1", {})
    message = str(refused.value)
    assert "127.0.0.1:1" in message and "Nothing was registered" in message
    assert not KafkaCluster.objects.exists()
    event = AuditEvent.objects.get()
    assert (event.action, event.result) == ("cluster.register", "refused")


@pytest.mark.parametrize(
    "name,bootstrap,config,expected",
    [
        ("..", "127.0.0.1:9092", {}, "Invalid cluster name"),
        ("bad name", "127.0.0.1:9092", {}, "Invalid cluster name"),
        ("ok", "", {}, "bootstrap.servers is required"),
        ("ok", "127.0.0.1:9092", {"no.such.property": "1"}, "no.such.property"),
    ],
)
def test_bad_registrations_say_what_is_wrong(db, name, bootstrap, config, expected):
    with pytest.raises(ReplicationError, match=expected):
        register_cluster(audit.Actor.system("tests"), name, bootstrap, config)
    assert not KafkaCluster.objects.exists()


def test_a_cluster_page_lists_its_topics_and_the_links_into_and_from_it(
    make_link, make_topic, topic_name, client_as
):
    make_topic(kafka.SOURCE, topic_name, partitions=3)
    link = make_link({"cluster.link.paused": "true"})
    create_mirror(audit.Actor.system("tests"), link, topic_name)
    client = client_as("viewer")

    source = client.get(reverse("cluster-detail", args=["source"])).content.decode()
    destination = client.get(reverse("cluster-detail", args=["destination"])).content.decode()

    assert f'data-link="{link.name}"' in source and f'data-link="{link.name}"' in destination
    assert "<h3>From source</h3>" in source and "<h3>Into destination</h3>" in destination
    row = f'<tr data-topic="{topic_name}">'
    assert row in source and row in destination
    mirrored = destination[destination.index(row) :]
    mirrored = mirrored[: mirrored.index("</tr>")]
    assert "<td>3</td>" in mirrored and f"over {link.name}" in mirrored
    assert "__consumer_offsets" not in source


def test_a_name_can_be_registered_only_once(registered_clusters):
    config = admin_config(kafka.SOURCE)
    bootstrap = config.pop("bootstrap.servers")
    with pytest.raises(ReplicationError, match="already registered"):
        register_cluster(audit.Actor.system("tests"), "source", bootstrap, config)


def test_only_admins_may_register_clusters(db, client_as):
    for role in ("viewer", "operator", "approver"):
        response = client_as(role).post(
            reverse("cluster-create"),
            {"name": "x", "bootstrap_servers": "127.0.0.1:9092", "client_config": ""},
        )
        assert response.status_code == 403, role
    assert not KafkaCluster.objects.exists()


def test_healthz_reports_database_redis_and_each_cluster(registered_clusters, client):
    response = client.get(reverse("healthz"))
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ok"
    assert body["database"] == {"ok": True}
    assert body["redis"] == {"ok": True}
    assert body["clusters"]["source"]["cluster_id"] == registered_clusters["source"].cluster_id
    assert body["clusters"]["destination"]["ok"] is True


def test_healthz_shows_an_unreachable_cluster_with_details_only_to_users(
    registered_clusters, client, client_as
):
    KafkaCluster.objects.filter(name="source").update(bootstrap_servers="127.0.0.1:1")
    anonymous = client.get(reverse("healthz")).json()
    assert anonymous["clusters"]["source"] == {"ok": False, "cluster_id": None}
    assert "127.0.0.1:1" not in repr(anonymous)
    body = client_as("viewer").get(reverse("healthz")).json()
    assert body["clusters"]["source"]["ok"] is False
    assert "127.0.0.1:1" in body["clusters"]["source"]["error"]
    assert body["clusters"]["destination"]["ok"] is True
