"""A cluster's schema registry: registered with the cluster or set later, checked to answer
as a registry before it is kept, its password encrypted and never shown, every change audited
and refused ones too; how it answers read in the background and shown from there; on the real
clusters and the stack's real registries."""

from __future__ import annotations

import base64

import pytest
from django.db import connection
from django.urls import reverse

from devstack import kafka, registry
from infra.schema_registry import MODES
from replication.core.errors import ReplicationError
from replication.governance import audit
from replication.models import AuditEvent, KafkaCluster
from replication.schemas import schema_registries
from replication.schemas.schema_registries import RegistryAccess, set_schema_registry

pytestmark = pytest.mark.integration

ACTOR = audit.Actor.system("tests")
SECRET = "registry-secret-4f1c"  # noqa: S105 (a test's password)


def test_the_embedded_clusters_are_registered_with_their_own_registries(
    registered_clusters, client_as
):
    for node in kafka.NODES:
        assert registered_clusters[node.name].schema_registry_url == registry.of(node.name).url
    page = client_as("viewer").get(reverse("cluster-detail", args=["destination"])).content
    page = page.decode()
    assert f"<code>{registry.DESTINATION.url}</code>" in page
    # What registering it read (the page asks the registry nothing itself).
    assert 'class="badge ok">answers' in page and 'id="schema-registry-checked">checked' in page
    assert "Set one" not in page and "Change" not in page  # a viewer may not change it


def test_the_beats_reading_of_each_registry_is_what_the_page_shows(registered_clusters):
    for cluster in registered_clusters.values():
        schema_registries.store(cluster, None)
        assert schema_registries.latest(cluster) is None
    schema_registries.refresh_all()  # the beat's task, run here (the worker sees no test rows)
    for cluster in registered_clusters.values():
        reading = schema_registries.latest(cluster)
        assert reading is not None and reading.reachable, reading
        assert reading.url == cluster.schema_registry_url and reading.mode in MODES


def test_an_admin_sets_a_registry_with_credentials_kept_encrypted_and_never_shown(
    registered_clusters, client_as
):
    client = client_as("admin")
    url = reverse("cluster-schema-registry", args=["source"])
    response = client.post(
        url,
        {
            "schema_registry_url": registry.SOURCE.url + "/",
            "schema_registry_username": "reader",
            "schema_registry_password": SECRET,
        },
    )
    assert response.status_code == 302, response.content.decode()
    cluster = KafkaCluster.objects.get(name="source")
    # The embedded registry asks for no credentials, so any pass; what matters is how kept.
    assert (cluster.schema_registry_url, cluster.schema_registry_username) == (
        registry.SOURCE.url,
        "reader",
    )
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM replication_kafkacluster WHERE id = %s", [cluster.id])
        assert SECRET not in repr(cursor.fetchone())
    scheme, token = cluster.schema_registry().session.headers["Authorization"].split(" ")
    assert (scheme, base64.b64decode(token).decode()) == ("Basic", f"reader:{SECRET}")
    for page in (reverse("cluster-detail", args=["source"]), url):
        shown = client.get(page).content.decode()
        assert SECRET not in shown
    assert (
        "<code>reader</code>"
        in client.get(reverse("cluster-detail", args=["source"])).content.decode()
    )
    event = AuditEvent.objects.get(action="cluster.schema_registry")
    assert (event.actor_name, event.result) == ("admin", "ok")
    assert event.before == {"url": registry.SOURCE.url}
    assert event.after == {
        "url": registry.SOURCE.url,
        "username": "reader",
        "password": "(sensitive)",
    }


@pytest.mark.parametrize(
    ("url", "username", "password", "said"),
    [
        ("http://127.0.0.1:1", "", "", "it cannot be reached"),
        (f"{registry.SOURCE.url}/nowhere", "", "", "is a schema registry speaking Confluent"),
        ("ftp://registry:8081", "", "", "not an http:// or https:// address"),
        ("http://user:pw@registry:8081", "", "", "without credentials"),
        ("http://registry:8081", "", "pw", "needs its username"),
        ("", "reader", "", "needs the registry's URL"),
        (registry.SOURCE.url, "read\r\nX-Evil: 1", "pw", "cannot hold line breaks"),
        (f"{registry.SOURCE.url}/\n2024-01-01 INFO forged", "", "", "holds control characters"),
        (f"{registry.SOURCE.url}\x1b]0;owned\x07", "", "", "holds control characters"),
        (registry.SOURCE.url, "reader", "p" * 1001, "longer than 1000 characters"),
    ],
)
def test_a_registry_that_is_wrong_is_refused_saying_why_and_nothing_changes(
    registered_clusters, url, username, password, said
):
    cluster = registered_clusters["destination"]
    with pytest.raises(ReplicationError) as refused:
        set_schema_registry(ACTOR, cluster, RegistryAccess(url, username, password))
    assert said in str(refused.value)
    assert "Traceback" not in str(refused.value)
    kept = KafkaCluster.objects.get(pk=cluster.pk)
    assert kept.schema_registry_url == registry.DESTINATION.url
    event = AuditEvent.objects.get(action="cluster.schema_registry")
    assert event.result == "refused" and said in event.message


def test_the_form_shows_why_and_an_empty_url_removes_the_registry(registered_clusters, client_as):
    client = client_as("admin")
    url = reverse("cluster-schema-registry", args=["destination"])
    refused = client.post(url, {"schema_registry_url": "http://127.0.0.1:1"})
    assert refused.status_code == 200
    assert "it cannot be reached" in refused.content.decode()
    assert client.post(url, {"schema_registry_url": ""}).status_code == 302
    assert KafkaCluster.objects.get(name="destination").schema_registry_url == ""
    page = client.get(reverse("cluster-detail", args=["destination"])).content.decode()
    assert "none registered" in page and "Set one" in page


def test_a_cluster_registered_from_the_form_keeps_its_registry(devstack, client_as):
    # The refused one first: a cluster is registered once, so a second name for it is refused
    # before its registry is asked.
    refused = client_as("admin").post(
        reverse("cluster-create"),
        {
            "name": "bad-schemas",
            "bootstrap_servers": kafka.SOURCE.bootstrap,
            "client_config": "",
            "schema_registry_url": "http://127.0.0.1:1",
        },
    )
    assert "it cannot be reached" in refused.content.decode()
    assert not KafkaCluster.objects.filter(name="bad-schemas").exists()  # nothing half-made
    response = client_as("admin").post(
        reverse("cluster-create"),
        {
            "name": "with-schemas",
            "bootstrap_servers": kafka.SOURCE.bootstrap,
            "client_config": "",
            "schema_registry_url": registry.SOURCE.url,
        },
    )
    assert response.status_code == 302
    cluster = KafkaCluster.objects.get(name="with-schemas")
    assert cluster.schema_registry_url == registry.SOURCE.url
    reading = schema_registries.latest(cluster)  # what registering it read, kept at once
    assert reading is not None and reading.reachable and reading.mode in MODES
