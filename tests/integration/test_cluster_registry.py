"""Registering clusters, and the Clusters page, against the real devstack clusters."""

import pytest
from django.db import connection
from django.urls import reverse

from devstack import kafka
from replication.core.errors import ReplicationError
from replication.governance import audit
from replication.kafka.clusters import register_cluster
from replication.models import AuditEvent, KafkaCluster
from tests.conftest import admin_config

pytestmark = pytest.mark.integration


def test_it_lists_both_clusters_with_their_real_cluster_ids(
    registered_clusters, client_as, var_dir
):
    response = client_as("viewer").get(reverse("clusters"))
    assert response.status_code == 200
    page = response.content.decode()
    for node in kafka.NODES:
        # The id Kafka wrote to disk when the storage was formatted: an independent judge.
        real_id = kafka.cluster_id_on_disk(node, var_dir)
        assert real_id and real_id in page
        assert registered_clusters[node.name].cluster_id == real_id
        # Both listeners: the console's (SASL) and the one the tutorials' clients use.
        assert f"<code>{node.sasl_bootstrap}</code>" in page
        assert f'<code class="ordinary-bootstrap">{node.bootstrap}</code>' in page
    assert page.count('class="badge ok">reachable') == 2
    assert page.count("ACLs enforced") == 2


def test_the_detail_page_shows_the_cluster_and_its_config(registered_clusters, client_as):
    page = client_as("viewer").get(reverse("cluster-detail", args=["source"])).content.decode()
    assert registered_clusters["source"].cluster_id in page
    assert "127.0.0.1:9192" in page and "SASL_PLAINTEXT" in page
    # the root Confluent's tools take as --url, serving this cluster alone
    assert "confluent kafka link list --url http://testserver/kafka/source" in page
    assert client_as("viewer").get(reverse("cluster-detail", args=["nope"])).status_code == 404


def test_wrong_credentials_are_refused_with_a_hint(devstack, db):
    config = {**admin_config(kafka.DESTINATION), "sasl.password": "not-the-password"}
    bootstrap = config.pop("bootstrap.servers")
    with pytest.raises(ReplicationError, match="credentials") as refused:
        register_cluster(audit.Actor.system("tests"), "wrong-password", bootstrap, config)
    assert "not-the-password" not in str(refused.value)
    assert not KafkaCluster.objects.exists()


def test_a_cluster_is_registered_once_whatever_the_name(registered_clusters):
    """A second name for one cluster id is refused: the API's paths by cluster id would
    resolve to either registration, and a link's half could land on the other one."""
    config = admin_config(kafka.SOURCE)
    bootstrap = config.pop("bootstrap.servers")
    with pytest.raises(ReplicationError, match="already registered as 'source'") as refused:
        register_cluster(audit.Actor.system("tests"), "source-again", bootstrap, config)
    assert refused.value.status == 409
    assert not KafkaCluster.objects.filter(name="source-again").exists()
    event = AuditEvent.objects.filter(target="cluster source-again").get()
    assert event.result == "refused" and "registered once" in event.message


def test_secrets_are_encrypted_at_rest_and_never_rendered(registered_clusters, client_as):
    password = admin_config(kafka.DESTINATION)["sasl.password"]
    cluster = KafkaCluster.objects.get(name="destination")
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM replication_kafkacluster WHERE id = %s", [cluster.id])
        raw_row = repr(cursor.fetchone())
    assert password not in raw_row
    assert cluster.connection_config()["sasl.password"] == password
    assert dict(cluster.display_config())["sasl.password"] == "(sensitive)"
    for url in (reverse("clusters"), reverse("cluster-detail", args=["destination"])):
        page = client_as("admin").get(url).content.decode()
        assert password not in page
    assert "sasl.username" in page and "(sensitive)" in page
    event = AuditEvent.objects.filter(target="cluster destination").get()
    assert password not in repr(event.after)
    assert event.after["config"]["sasl.password"] == "(sensitive)"


def test_an_admin_registers_a_cluster_from_the_form(devstack, client_as):
    client = client_as("admin")
    response = client.post(
        reverse("cluster-create"),
        {"name": "plain-source", "bootstrap_servers": kafka.SOURCE.bootstrap, "client_config": ""},
    )
    assert response.status_code == 302
    cluster = KafkaCluster.objects.get(name="plain-source")
    assert cluster.cluster_id == kafka.cluster_id_on_disk(kafka.SOURCE, devstack.var_dir)
    event = AuditEvent.objects.get(action="cluster.register")
    assert (event.actor_name, event.result) == ("admin", "ok")


def test_the_form_shows_why_a_registration_failed(devstack, client_as):
    response = client_as("admin").post(
        reverse("cluster-create"),
        {"name": "broken", "bootstrap_servers": "127.0.0.1:1", "client_config": "nonsense"},
    )
    assert response.status_code == 200
    assert "not &#x27;key=value&#x27;" in response.content.decode()
    assert not KafkaCluster.objects.exists()


def test_an_address_that_now_reaches_another_cluster_is_flagged(registered_clusters, client_as):
    KafkaCluster.objects.filter(name="source").update(
        bootstrap_servers=kafka.DESTINATION.sasl_bootstrap
    )
    page = client_as("viewer").get(reverse("clusters")).content.decode()
    assert "different cluster" in page
    assert "now reaches a different cluster" in page
    body = client_as("viewer").get(reverse("healthz")).json()
    assert body["clusters"]["source"]["ok"] is False
    assert body["clusters"]["source"]["cluster_id"] == registered_clusters["destination"].cluster_id


def test_a_real_celery_worker_probes_the_registered_clusters(
    transactional_db, celery_worker, registered_clusters
):
    from replication.tasks import refresh_clusters

    report = refresh_clusters.delay().get(timeout=60)
    assert report["source"]["cluster_id"] == registered_clusters["source"].cluster_id
    assert report["destination"]["cluster_id"] == registered_clusters["destination"].cluster_id
    assert report["destination"]["authorizer_enabled"] is True
