"""Cluster links against the real clusters: every operation and every refusal."""

import pytest

from devstack import kafka
from infra.processes import wait_for
from replication.core.errors import ReplicationError
from replication.cutover.link_deletion import delete_link
from replication.models import AuditEvent, ClusterLink
from replication.topics.link_creation import create_link
from replication.topics.links import (
    alter_link_configs,
    describe_link_configs,
)
from replication.topics.mirrors import create_mirror
from tests import leftovers
from tests.db.test_links import ACTOR
from tests.kafka_clients import produce

pytestmark = pytest.mark.integration


def test_creating_a_link_records_the_real_source_cluster_id(make_link, var_dir):
    link = make_link({"metadata.max.age.ms": "5000"}, name="demo-link")
    assert link.source_cluster_id == kafka.cluster_id_on_disk(kafka.SOURCE, var_dir)
    assert link.state == "ACTIVE"
    assert link.link_id
    assert ClusterLink.objects.get(name="demo-link").configs == {
        "bootstrap.servers": kafka.SOURCE.bootstrap,
        "metadata.max.age.ms": "5000",
    }
    event = AuditEvent.objects.get(action="link.create")
    assert event.result == "ok" and event.after["source_cluster_id"] == link.source_cluster_id


def test_a_link_over_sasl_keeps_its_password_encrypted_and_masked(registered_clusters, var_dir):
    password = kafka.credentials(var_dir)["replicator"]
    jaas = (
        "org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'username="replicator" password="{password}";'
    )
    link = create_link(
        ACTOR,
        registered_clusters["destination"],
        "sasl-link",
        {
            "bootstrap.servers": kafka.SOURCE.sasl_bootstrap,
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN",
            "sasl.jaas.config": jaas,
        },
    )
    stored = ClusterLink.objects.filter(pk=link.pk).values("configs", "secret_configs").get()
    assert password not in str(stored)
    assert set(stored["secret_configs"]) == {"sasl.jaas.config"}
    shown = {e.name: e for e in describe_link_configs(link)}
    assert shown["sasl.jaas.config"].value == "(sensitive)"
    assert shown["sasl.jaas.config"].is_sensitive
    assert password not in str(AuditEvent.objects.get(action="link.create").after)


def test_moving_a_link_with_credentials_needs_the_credentials_again(registered_clusters, var_dir):
    password = kafka.credentials(var_dir)["replicator"]
    login = {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.username": "replicator",
        "sasl.password": password,
    }
    link = create_link(
        ACTOR,
        registered_clusters["destination"],
        "moving",
        {"bootstrap.servers": kafka.SOURCE.sasl_bootstrap, **login},
    )
    elsewhere = {"bootstrap.servers": f"localhost:{kafka.SOURCE.sasl_port}"}
    with pytest.raises(ReplicationError, match="needs the credentials again: set sasl.password"):
        alter_link_configs(ACTOR, link, elsewhere)
    alter_link_configs(ACTOR, link, {**elsewhere, "sasl.password": password})
    link.refresh_from_db()
    assert link.configs["bootstrap.servers"] == elsewhere["bootstrap.servers"]


def test_a_link_with_wrong_sasl_credentials_is_refused(registered_clusters):
    with pytest.raises(ReplicationError, match="[Aa]uthentication") as refused:
        create_link(
            ACTOR,
            registered_clusters["destination"],
            "bad-login",
            {
                "bootstrap.servers": kafka.SOURCE.sasl_bootstrap,
                "security.protocol": "SASL_PLAINTEXT",
                "sasl.username": "replicator",
                "sasl.password": "wrong",
            },
        )
    assert "Nothing was changed" in str(refused.value)
    assert not ClusterLink.objects.exists()


def test_deleting_a_link_with_mirrors_is_refused_unless_forced(make_link, make_topic, topic_name):
    link = make_link()
    make_topic(kafka.SOURCE, topic_name)
    create_mirror(ACTOR, link, topic_name)

    with pytest.raises(ReplicationError, match=f"still has mirror topics: {topic_name}"):
        delete_link(ACTOR, link)
    delete_link(ACTOR, link, force=True, validate_only=True)
    assert ClusterLink.objects.filter(pk=link.pk).exists()

    # An ordinary producer is refused while the topic is a mirror...
    plain = {"bootstrap.servers": kafka.DESTINATION.bootstrap}
    assert produce(plain, topic_name, [{"value": b"no"}])[0][0] is not None

    delete_link(ACTOR, link, force=True)
    assert not ClusterLink.objects.filter(pk=link.pk).exists()
    assert AuditEvent.objects.get(action="mirror.failover").after["state"] == "PENDING_STOPPED"
    stopped = AuditEvent.objects.get(action="mirror.stopped")
    assert stopped.after["state"] == "STOPPED" and stopped.after["stop_offsets"] == {"0": 0}

    # ...and welcome once forcing the deletion has failed the mirror over (the broker's
    # authorizer takes a moment to drop the ACLs).
    try:
        assert wait_for(lambda: produce(plain, topic_name, [{"value": b"yes"}])[0][0] is None, 30)
    finally:
        leftovers.delete_topics(kafka.DESTINATION, [topic_name])
